// The example questions most like a new one, for an LLM prompt: a model shown how this
// business asks for "revenue" writes the same SQL far more often than one shown names alone.
// Likeness is shared words (folded to a rough singular, filler words left out), scaled by
// both lengths, so a long example does not win on size. Linear in the examples' text.
import type { AnnotationExample } from './annotations.ts';

export const PROMPT_EXAMPLES = 3;

const FILLER = new Set([
  'a', 'an', 'the', 'of', 'in', 'on', 'for', 'to', 'by', 'and', 'or', 'is', 'are', 'was', 'were', 'what', 'which', 'who',
  'how', 'many', 'much', 'me', 'show', 'list', 'give', 'find', 'get', 'all', 'with', 'each', 'per', 'do', 'does', 'did',
  'that', 'this', 'there', 'from', 'at', 'as', 'be', 'it', 'its', 'their', 'our', 'we', 'i',
]); // prettier-ignore

/** Lower-case words, roughly singular, without filler. */
export function questionWords(text: string): Set<string> {
  const words = new Set<string>();
  for (const raw of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length < 2 || FILLER.has(raw)) continue;
    words.add(raw.length > 3 ? raw.replace(/(?<=[^s])s$/, '') : raw);
  }
  return words;
}

/** At most `limit` examples sharing a word with the question, most alike first (ties keep
 * the document's order). */
export function closestExamples(examples: AnnotationExample[], question: string, limit = PROMPT_EXAMPLES): AnnotationExample[] {
  const asked = questionWords(question);
  if (asked.size === 0) return [];
  return examples
    .map((example, i) => {
      const words = questionWords(example.question);
      let shared = 0;
      for (const w of words) if (asked.has(w)) shared++;
      return { example, i, score: shared === 0 ? 0 : shared / Math.sqrt(words.size * asked.size) };
    })
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, limit)
    .map((s) => s.example);
}
