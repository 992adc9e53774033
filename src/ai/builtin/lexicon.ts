// Words the builtin generator understands beyond the schema's own names: synonyms, aggregate
// and comparison words, superlatives and the verbs that point at a table or date column.
// Synonyms are only tried when the word itself names nothing in the schema, so a database
// that really has a `clients` table keeps it.
import type { AggregateFn, CompareOp } from './plan.ts';

/** word (lemma) → schema words it may stand for, tried in order. */
export const SYNONYMS: Record<string, string[]> = {
  client: ['customer', 'user'], buyer: ['customer'], shopper: ['customer'], purchaser: ['customer'],
  consumer: ['customer'], user: ['customer', 'member'], person: ['customer', 'people', 'employee'],
  people: ['customer', 'person', 'employee'],
  purchase: ['order'], sale: ['order'], transaction: ['order', 'payment'],
  article: ['product'], good: ['product'], merchandise: ['product'], item: ['product'], ware: ['product'],
  kind: ['category', 'type'], type: ['category'], group: ['category'], genre: ['category'],
  cost: ['price'], costs: ['price'], priced: ['price'], pricing: ['price'], worth: ['price', 'value'],
  town: ['city'], nation: ['country'], nationality: ['country'], surname: ['last name'],
  lastname: ['last name'], firstname: ['first name'], forename: ['first name'],
  mail: ['email'], e: ['email'], star: ['rating'], stars: ['rating'], grade: ['rating', 'score'],
  rated: ['rating'], rate: ['rating'], score: ['rating'],
  qty: ['quantity'], amount: ['total', 'quantity', 'amount'], value: ['total', 'price', 'value'],
  inventory: ['stock'], stocked: ['stock'], units: ['quantity'], unit: ['quantity'],
  sold: ['quantity'], mobile: ['phone'], telephone: ['phone'], cell: ['phone'],
  old: ['age'], aged: ['age'], birthday: ['birth date', 'date of birth'], born: ['birth'],
  located: ['location', 'city'],
  title: ['name', 'title'], called: ['name'], named: ['name'],
  joined: ['created at'], registered: ['created at'], signed: ['created at'], signup: ['created at'],
  created: ['created at', 'created'], added: ['created at'],
  earn: ['salary', 'income'], earns: ['salary'], paid: ['salary'], wage: ['salary'],
  weigh: ['weight'], weighs: ['weight'], tall: ['height'], long: ['length', 'duration'],
  capacity: ['capacity'], size: ['size', 'capacity'], population: ['population'],
  status: ['status', 'state'], state: ['state', 'status'], year: ['year'], date: ['date'],
};

export const AGG_WORDS: Record<string, AggregateFn> = {
  average: 'avg', avg: 'avg', mean: 'avg', typical: 'avg',
  total: 'sum', sum: 'sum', combined: 'sum', overall: 'sum', cumulative: 'sum',
  maximum: 'max', max: 'max', highest: 'max', largest: 'max', biggest: 'max', greatest: 'max', top: 'max', latest: 'max', last: 'max',
  minimum: 'min', min: 'min', lowest: 'min', smallest: 'min', least: 'min', earliest: 'min', first: 'min', fewest: 'min',
};

/** Comparator phrases (lower-case words) and their operator; longest first when matched. */
export const COMPARATORS: [string[], CompareOp][] = [
  [['more', 'than'], '>'], [['greater', 'than'], '>'], [['higher', 'than'], '>'], [['larger', 'than'], '>'],
  [['bigger', 'than'], '>'], [['over'], '>'], [['above'], '>'], [['exceeding'], '>'], [['exceeds'], '>'],
  [['exceed'], '>'], [['beyond'], '>'], [['after'], '>'], [['later', 'than'], '>'],
  [['at', 'least'], '>='], [['no', 'less', 'than'], '>='], [['not', 'less', 'than'], '>='], [['minimum', 'of'], '>='],
  [['no', 'fewer', 'than'], '>='], [['or', 'more'], '>='],
  [['less', 'than'], '<'], [['fewer', 'than'], '<'], [['lower', 'than'], '<'], [['smaller', 'than'], '<'],
  [['under'], '<'], [['below'], '<'], [['before'], '<'], [['earlier', 'than'], '<'], [['cheaper', 'than'], '<'],
  [['at', 'most'], '<='], [['no', 'more', 'than'], '<='], [['not', 'more', 'than'], '<='], [['up', 'to'], '<='],
  [['maximum', 'of'], '<='], [['or', 'less'], '<='], [['or', 'fewer'], '<='],
  [['exactly'], '='], [['equal', 'to'], '='], [['equals'], '='], [['equal'], '='],
  [['not', 'equal', 'to'], '<>'], [['other', 'than'], '<>'], [['different', 'from'], '<>'],
  [['>='], '>='], [['<='], '<='], [['>'], '>'], [['<'], '<'], [['='], '='], [['<>'], '<>'], [['!='], '<>'],
];

/** Comparative adjectives that carry their column: "older than 30" → age > 30. */
export const COMPARATIVE_COLUMNS: Record<string, { words: string[]; op: CompareOp }> = {
  older: { words: ['age'], op: '>' }, younger: { words: ['age'], op: '<' },
  heavier: { words: ['weight'], op: '>' }, lighter: { words: ['weight'], op: '<' },
  taller: { words: ['height'], op: '>' }, shorter: { words: ['height', 'length'], op: '<' },
  longer: { words: ['length', 'duration'], op: '>' }, cheaper: { words: ['price', 'cost'], op: '<' },
  pricier: { words: ['price', 'cost'], op: '>' }, expensive: { words: ['price', 'cost'], op: '>' },
  larger: { words: ['size', 'capacity', 'area'], op: '>' }, bigger: { words: ['size', 'capacity', 'area'], op: '>' },
};

export type SuperKind =
  | { kind: 'column'; words: string[]; dir: 'ASC' | 'DESC'; person?: string[] }
  | { kind: 'measure'; dir: 'ASC' | 'DESC' }
  | { kind: 'date'; dir: 'ASC' | 'DESC' }
  | { kind: 'sold'; dir: 'ASC' | 'DESC' }
  | { kind: 'rating'; dir: 'ASC' | 'DESC' };

/** Superlative phrases (lower-case words, longest first). */
export const SUPERLATIVES: [string[], SuperKind][] = [
  [['most', 'expensive'], { kind: 'column', words: ['price', 'cost'], dir: 'DESC' }],
  [['least', 'expensive'], { kind: 'column', words: ['price', 'cost'], dir: 'ASC' }],
  [['most', 'recent'], { kind: 'date', dir: 'DESC' }], [['least', 'recent'], { kind: 'date', dir: 'ASC' }],
  [['most', 'popular'], { kind: 'sold', dir: 'DESC' }], [['least', 'popular'], { kind: 'sold', dir: 'ASC' }],
  [['best', 'selling'], { kind: 'sold', dir: 'DESC' }], [['top', 'selling'], { kind: 'sold', dir: 'DESC' }],
  [['worst', 'selling'], { kind: 'sold', dir: 'ASC' }], [['bestselling'], { kind: 'sold', dir: 'DESC' }],
  [['most', 'sold'], { kind: 'sold', dir: 'DESC' }], [['least', 'sold'], { kind: 'sold', dir: 'ASC' }],
  [['highest', 'rated'], { kind: 'rating', dir: 'DESC' }], [['best', 'rated'], { kind: 'rating', dir: 'DESC' }],
  [['top', 'rated'], { kind: 'rating', dir: 'DESC' }], [['lowest', 'rated'], { kind: 'rating', dir: 'ASC' }],
  [['worst', 'rated'], { kind: 'rating', dir: 'ASC' }], [['best'], { kind: 'rating', dir: 'DESC' }], [['worst'], { kind: 'rating', dir: 'ASC' }],
  [['priciest'], { kind: 'column', words: ['price', 'cost'], dir: 'DESC' }], [['costliest'], { kind: 'column', words: ['price', 'cost'], dir: 'DESC' }],
  [['cheapest'], { kind: 'column', words: ['price', 'cost'], dir: 'ASC' }],
  [['oldest'], { kind: 'column', words: ['age'], dir: 'DESC' }], [['youngest'], { kind: 'column', words: ['age'], dir: 'ASC' }],
  [['newest'], { kind: 'date', dir: 'DESC' }], [['latest'], { kind: 'date', dir: 'DESC' }], [['recent'], { kind: 'date', dir: 'DESC' }],
  [['earliest'], { kind: 'date', dir: 'ASC' }],
  [['heaviest'], { kind: 'column', words: ['weight'], dir: 'DESC' }], [['lightest'], { kind: 'column', words: ['weight'], dir: 'ASC' }],
  [['tallest'], { kind: 'column', words: ['height'], dir: 'DESC' }], [['shortest'], { kind: 'column', words: ['height', 'length', 'duration'], dir: 'ASC' }],
  [['longest'], { kind: 'column', words: ['length', 'duration'], dir: 'DESC' }],
  [['largest'], { kind: 'measure', dir: 'DESC' }], [['biggest'], { kind: 'measure', dir: 'DESC' }],
  [['highest'], { kind: 'measure', dir: 'DESC' }], [['greatest'], { kind: 'measure', dir: 'DESC' }],
  [['smallest'], { kind: 'measure', dir: 'ASC' }], [['lowest'], { kind: 'measure', dir: 'ASC' }],
];

/** Words that mean revenue: sum of quantity × unit price, or of an order total. */
export const REVENUE_WORDS = new Set(['revenue', 'sale', 'sales', 'turnover', 'income', 'earning', 'earnings', 'spent', 'spend', 'spending', 'spends']);
/** Words that mean units sold: sum of a quantity column. */
export const UNITS_WORDS = new Set(['unit', 'units', 'sold', 'quantity', 'quantities', 'piece', 'pieces', 'copy', 'copies']);

/** Verbs that point at a table by a word of its name, and at its date column. */
export const VERBS: Record<string, string[]> = {
  ordered: ['order'], order: ['order'], placed: ['order'], bought: ['order', 'purchase'], buy: ['order', 'purchase'],
  purchased: ['order', 'purchase'], purchase: ['order', 'purchase'], sold: ['order', 'sale'], shopped: ['order'],
  reviewed: ['review', 'rating'], review: ['review'], rated: ['review', 'rating'], rate: ['review', 'rating'],
  wrote: ['review'], written: ['review'], write: ['review'], commented: ['comment', 'review'],
  visited: ['visit'], visit: ['visit'], enrolled: ['enrollment', 'registration'], registered: ['registration'],
  attended: ['attendance'], paid: ['payment'], booked: ['booking'],
};

/** Verbs naming a date column by its words ("joined in 2024" → created_at). */
export const DATE_VERBS: Record<string, string[]> = {
  joined: ['created', 'joined', 'registered', 'signup'], registered: ['registered', 'created'],
  signed: ['created', 'signup'], created: ['created'], added: ['created', 'added'],
  ordered: ['ordered', 'order'], placed: ['ordered', 'order', 'placed'], bought: ['ordered', 'order'],
  purchased: ['ordered', 'order', 'purchased'], made: ['ordered', 'order', 'created'],
  reviewed: ['created', 'reviewed'], written: ['created'], shipped: ['shipped'], delivered: ['delivered'],
  born: ['birth', 'born'], released: ['release', 'released'], published: ['publish', 'published'],
  founded: ['founded', 'found'], opened: ['open', 'opened'], hired: ['hire', 'hired'], started: ['start', 'started'],
};

/** Words that carry no meaning of their own in a question. */
export const FILLER = new Set([
  'the', 'a', 'an', 'all', 'every', 'each', 'any', 'our', 'their', 'its', 'his', 'her', 'my', 'your',
  'of', 'that', 'which', 'who', 'whose', 'have', 'has', 'had', 'been', 'be', 'is', 'are', 'was', 'were',
  'do', 'does', 'did', 'there', 'with', 'for', 'in', 'on', 'at', 'by', 'to', 'from', 'and', 'as',
  'currently', 'ever', 'already', 'so', 'far', 'respectively', 'corresponding', 'also', 'them', 'it',
  'they', 'we', 'us', 'i', 'me', 'you', 'please', 'can', 'could', 'would', 'will', 'shall', 'should',
  'what', 'which', 'list', 'show', 'give', 'get', 'find', 'display', 'tell', 'return', 'name', 'names',
  'how', 'many', 'much', 'number', 'count', 'different', 'distinct', 'unique', 'total', 'some', 'exist',
  'stored', 'recorded', 'available', 'existing', 'known', 'listed', 'present', 'make', 'made', 'place', 'placed',
  'whose', 'where', 'when', 'whom', 'this', 'these', 'those', 'such', 'same', 'just', 'only', 'else',
  'information', 'info', 'details', 'detail', 'data', 'record', 'records', 'entry', 'entries', 'row', 'rows',
  'database', 'table', 'tables', 'system', 'registered', 'live', 'lives', 'living', 'located', 'based',
  'come', 'comes', 'coming', 'belong', 'belongs', 'belonging', 'being', 'having', 'contain', 'contains',
  'include', 'includes', 'including', 'along', 'together', 'also', 'both', 'either', 'respective', 'here',
  'than', 'then', 'out', 'up', 'into', 'per', 'via', 'across', 'within', 'among', 'amongst', 'between',
  'whole', 'entire', 'complete', 'full', 'everything', 'anything', 'something', 'one', 'ones', 'someone', 'anyone',
  'overall', 'altogether', 'combined', 'currently', 'now', 'today', 'yet', 'still', 'let', 'know', 'want',
  'see', 'need', 'look', 'looking', 'like', 'kindly', 'quickly', 'tell', 'describe', 'other', 'another',
  'amount', 'id', 'ids', 'identifier', 'identifiers', 'corresponding', 'related', 'associated', 'relevant',
  'value', 'values', 'about', 'given', 'respectively', 'used', 'use', 'uses', 'using', 'happen', 'happened',
  'took', 'take', 'taken', 'write', 'wrote', 'written', 'receive', 'received', 'got', 'gets', 'go', 'went',
  'sort', 'sorted', 'order', 'ordered', 'arranged', 'ranked', 'descending', 'ascending', 'asc', 'desc',
  'alphabetical', 'alphabetically', 'reverse', 'result', 'results', 'average', 'sum', 'there', 'plus',
]);
