// Tokenising and normalising questions and identifiers for the builtin generator: one
// representation for "OrderItems", "order_items" and "order items", and plural/singular
// folded so "customers" meets the table `customer` and the table `customers`.

export type TokenKind = 'word' | 'number' | 'quoted' | 'date' | 'op';

export interface Token {
  i: number;
  /** Text as typed (quoted strings without their quotes). */
  raw: string;
  lower: string;
  /** Lower-case singular form, for schema matching. */
  lemma: string;
  kind: TokenKind;
  /** Numeric value for kind 'number'. */
  num?: number;
  /** True when the question wrote the word with a capital letter not at the start. */
  capital: boolean;
}

const IRREGULAR: Record<string, string> = {
  people: 'person',
  children: 'child',
  men: 'man',
  women: 'woman',
  feet: 'foot',
  teeth: 'tooth',
  mice: 'mouse',
  geese: 'goose',
  data: 'data',
  criteria: 'criterion',
  indices: 'index',
  statuses: 'status',
  addresses: 'address',
  businesses: 'business',
  series: 'series',
  species: 'species',
  news: 'news',
  analyses: 'analysis',
  bases: 'base',
  cases: 'case',
  courses: 'course',
  houses: 'house',
  horses: 'horse',
  purchases: 'purchase',
  sales: 'sale',
  shoes: 'shoe',
  toes: 'toe',
  heroes: 'hero',
  potatoes: 'potato',
  leaves: 'leaf',
  lives: 'life',
  wives: 'wife',
  knives: 'knife',
  shelves: 'shelf',
  movies: 'movie',
  cookies: 'cookie',
  pies: 'pie',
  ties: 'tie',
  calories: 'calorie',
  types: 'type',
  names: 'name',
  dates: 'date',
  games: 'game',
  gates: 'gate',
  states: 'state',
  rates: 'rate',
  templates: 'template',
  vehicles: 'vehicle',
  titles: 'title',
  roles: 'role',
  rules: 'rule',
  schedules: 'schedule',
  sizes: 'size',
  prices: 'price',
  services: 'service',
  devices: 'device',
  invoices: 'invoice',
  places: 'place',
  races: 'race',
  stores: 'store',
  scores: 'score',
  codes: 'code',
  zones: 'zone',
  phones: 'phone',
  languages: 'language',
  images: 'image',
  pages: 'page',
  stages: 'stage',
  ages: 'age',
  messages: 'message',
  packages: 'package',
  villages: 'village',
  wages: 'wage',
};

const KEEP = new Set([
  'status',
  'address',
  'class',
  'business',
  'analysis',
  'bus',
  'gas',
  'series',
  'species',
  'news',
  'is',
  'was',
  'has',
  'this',
  'its',
  'us',
  'as',
  'yes',
  'plus',
  'campus',
  'census',
  'chassis',
  'less',
  'unless',
  'across',
  'various',
  'previous',
  'famous',
  'bonus',
  'virus',
  'focus',
  'process',
  'access',
  'success',
  'dress',
  'miss',
  'boss',
  'loss',
  'glass',
  'pass',
  'lens',
  'does',
  'goes',
  'always',
  'perhaps',
  'sometimes',
  'ones',
  'whereas',
  'thus',
  'alias',
  'atlas',
  'canvas',
  'chess',
  'express',
  'means',
  'kudos',
  'gross',
  'cross',
  'mass',
  'progress',
]);

/** English singular of a lower-case word (rules for the plurals schema names use). */
export function singular(word: string): string {
  const w = word.toLowerCase();
  // "ids" is the plural schema names and questions use most ("the ids of documents").
  if (w === 'ids') return 'id';
  if (w.length <= 3 || KEEP.has(w)) return w;
  if (IRREGULAR[w]) return IRREGULAR[w];
  if (/[^aeiou]ies$/.test(w)) return w.slice(0, -3) + 'y';
  if (/(ss|sh|ch|x|z)es$/.test(w)) return w.slice(0, -2);
  if (/(ss|us|is|ous)$/.test(w)) return w;
  if (/s$/.test(w) && !/ss$/.test(w)) return w.slice(0, -1);
  return w;
}

/** Words of an identifier: snake_case, camelCase, kebab, digits; lower case, singular.
 * `HTTPServer` splits before the capital that starts a word with a lookahead: the former
 * `([A-Z]+)([A-Z][a-z])` rescanned the rest of a capitals run from every start, and a SQLite
 * column named with 50,000 capitals held the event loop 7 s. */
export function splitIdentifier(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z])(?=[A-Z][a-z])/g, '$1 ')
    .replace(/([A-Za-z])([0-9])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => singular(w.toLowerCase()));
}

const NUMBER_WORDS: Record<string, number> = {
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  hundred: 100,
  thousand: 1000,
};
// "one" is a number only after words that make it one ("more than one", "top one").
const ONE_AFTER = new Set(['than', 'least', 'most', 'exactly', 'only', 'top', 'just', 'first', 'last']);

export function normalizeQuestion(q: string): string {
  return q
    .replace(/[\u2018\u2019\u02bc]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/\b(can)'t\b/gi, '$1 not')
    .replace(/\bwon't\b/gi, 'will not')
    .replace(/\b([A-Za-z]+)n't\b/g, '$1 not')
    .replace(/\b([A-Za-z]+)'(re|ve|ll|d|m)\b/g, '$1')
    .replace(/\b([A-Za-z]+)s'(?=\s|$)/g, '$1s')
    .replace(/\b([A-Za-z]+)'s\b/g, '$1')
    .replace(/&/g, ' and ');
}

const TOKEN_RE =
  /"([^"]+)"|(?<![A-Za-z])'([^']+)'(?![A-Za-z])|(\d{4}-\d{2}-\d{2})(?:[ T]\d{2}:\d{2}(?::\d{2})?)?|([$€£]?\d[\d,]*(?:\.\d+)?)(k\b)?|(>=|<=|<>|!=|[<>=])|([A-Za-z][A-Za-z0-9_]*(?:'[A-Za-z]+)*)/g;

export function tokenize(question: string): Token[] {
  const text = normalizeQuestion(question);
  const out: Token[] = [];
  for (const m of text.matchAll(TOKEN_RE)) {
    const start = m.index ?? 0;
    // A sentence starts after . ! or ? and blanks; looked for backwards over the blanks
    // only (a regex over text.slice(0, start) read the whole prefix per token: quadratic).
    let back = start - 1;
    while (back >= 0 && /\s/.test(text[back])) back--;
    const atStart = out.length === 0 || (back >= 0 && '.!?'.includes(text[back]));
    const push = (raw: string, kind: TokenKind, num?: number): void => {
      const lower = raw.toLowerCase();
      out.push({
        i: out.length,
        raw,
        lower,
        lemma: kind === 'word' ? singular(lower) : lower,
        kind,
        num,
        capital: kind === 'word' && !atStart && /^[A-Z]/.test(raw),
      });
    };
    if (m[1] !== undefined || m[2] !== undefined) push((m[1] ?? m[2]).trim(), 'quoted');
    else if (m[3] !== undefined) push(m[3], 'date');
    else if (m[4] !== undefined) {
      let n = Number(m[4].replace(/^[$€£]/, '').replace(/,/g, ''));
      if (m[5]) n *= 1000;
      push(m[4].replace(/^[$€£]/, '').replace(/,/g, '') + (m[5] ? '000' : ''), 'number', n);
    } else if (m[6] !== undefined) push(m[6], 'op');
    else {
      // Hyphenated words arrive split ("best-selling" → best, selling) by the regex.
      const w = m[7];
      const lower = w.toLowerCase();
      const prev = out[out.length - 1];
      if (lower in NUMBER_WORDS) push(w, 'number', NUMBER_WORDS[lower]);
      else if (lower === 'one' && prev && ONE_AFTER.has(prev.lower)) push(w, 'number', 1);
      else push(w, 'word');
    }
  }
  return out;
}

/** Lower-case words of a value, the way a question would spell them. */
export function valueWords(value: string): string[] {
  return normalizeQuestion(value)
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

export const STOPWORDS = new Set(
  `a an the of in on at for to by with and or is are was were be been being do does did done
  have has had having that which who whom whose what where when how why all any each every
  there their they them it its this these those from as me my our we us you your i he she his
  her please show list give get find display tell return can could would should will shall
  also only just some than then same ever currently still already so such both either
  whether if about into onto out up down over off per via within without not no never
  let see know want need like look looking stored recorded available existing
  one ones anything everything something someone anyone everyone those here
  much many more most less least few fewer lot lots whole entire overall information info
  details data database table tables record records entry entries row rows
  listed yet again other another else while s`.split(/\s+/),
);

export const MONTHS: Record<string, number> = {
  january: 1,
  jan: 1,
  february: 2,
  feb: 2,
  march: 3,
  mar: 3,
  april: 4,
  apr: 4,
  may: 5,
  june: 6,
  jun: 6,
  july: 7,
  jul: 7,
  august: 8,
  aug: 8,
  september: 9,
  sep: 9,
  sept: 9,
  october: 10,
  oct: 10,
  november: 11,
  nov: 11,
  december: 12,
  dec: 12,
};
