// The instructions and schema text sent to an LLM. The same content goes to every provider;
// only the envelope differs (OpenAI puts the system text in a message, Anthropic in a field).
import { dialectLabel } from '../dialect.ts';
import { extractSqlDetailed } from '../extract-sql.ts';
import type { ProviderReply, ProviderRequest } from '../generate.ts';
import { renderSchema } from '../schema-context.ts';
import { chooseTables } from '../table-selection.ts';
import { tablesInSql } from '../generate.ts';
import { closestExamples } from '../../annotations/examples.ts';

export interface ChatTurn {
  role: 'user' | 'assistant';
  content: string;
}

export interface PromptParts {
  system: string;
  turns: ChatTurn[];
  /** The tables whose CREATE TABLE text the prompt carries (all of them when they fit). */
  offered: string[];
}

export function buildPrompt(req: ProviderRequest): PromptParts {
  const dialect = dialectLabel(req.dialect);
  const statementRule = req.canWrite
    ? 'Write exactly one SQL statement. Prefer a read (SELECT); write a data-changing statement only when the question explicitly asks to change data.'
    : 'Write exactly one read-only SELECT statement (WITH … SELECT is fine). Never write INSERT, UPDATE, DELETE, DDL or any statement that changes data or settings: the caller may only read.';
  const system = [
    `You translate questions into SQL for a ${dialect} database.`,
    'Rules:',
    `- ${statementRule}`,
    `- Use ${dialect} syntax and functions. Use only the tables and columns in the schema; quote identifiers the way ${dialect} requires.`,
    '- Comments in the schema say what tables and columns mean and what else people call them; sample values listed after a column show how data is spelled (match them exactly in filters).',
    '- Where an example question is like the one asked, follow its SQL.',
    '- Add LIMIT only when the question asks for a number of rows or a top/first/most item.',
    '- Answer with the SQL in one ```sql fenced block, then one short sentence explaining what it returns.',
  ].join('\n');
  const examples = closestExamples(req.schema.examples ?? [], req.prompt);
  const choice = chooseTables(
    req.schema,
    req.prompt,
    examples.flatMap((e) => tablesInSql(e.sql, req.schema)),
  );
  const tables = choice.tables;
  // The business's own examples, closest to this question first: how it spells "revenue".
  const shown =
    examples.length === 0
      ? ''
      : `\n\nExamples of questions on this database and the SQL that answers them:\n\n${examples
          .map((e) => `Question: ${e.question}\n\`\`\`sql\n${e.sql}\n\`\`\``)
          .join('\n\n')}`;
  const first: ChatTurn = {
    role: 'user',
    content: `Database schema (${dialect}):\n\n${renderSchema(req.schema, { tables })}${shown}\n\nQuestion: ${req.prompt}`,
  };
  const turns: ChatTurn[] = [first];
  for (const p of req.previous ?? []) {
    turns.push({ role: 'assistant', content: '```sql\n' + p.sql + '\n```' });
    turns.push({
      role: 'user',
      content: `That SQL was not accepted: ${p.error}\nFix it and answer again with the corrected SQL in one \`\`\`sql fenced block.`,
    });
  }
  return { system, turns, offered: tables };
}

/** The model's text → provider reply. */
export function parseReply(text: string, req: ProviderRequest): ProviderReply {
  const { sql, prose } = extractSqlDetailed(text);
  const explanation = prose
    .replace(/^(explanation|here is|here's)[^:]*:\s*/i, '')
    .slice(0, 500)
    .trim();
  return { sql, explanation: explanation || 'SQL written by the language model.', tables: sql ? tablesInSql(sql, req.schema) : [] };
}
