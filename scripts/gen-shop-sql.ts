// Generates src/sample/shop.sql, the built-in sample shop database.
//   node --import tsx scripts/gen-shop-sql.ts > src/sample/shop.sql
// Deterministic (seeded PRNG, no clock): running it twice gives the same bytes, so the
// committed .sql only changes when this script does. The .sql is what ships; this script is
// kept so the data can be regenerated or extended.
//
// Portability rules the output follows, because the same file runs unchanged on SQLite,
// PostgreSQL and MariaDB:
// - plain CREATE TABLE, INTEGER PRIMARY KEY, VARCHAR, NUMERIC(10,2), TIMESTAMP, table-level
//   FOREIGN KEY clauses (MariaDB ignores column-level REFERENCES);
// - string literals in single quotes with '' escaping, never backslashes (MySQL treats \ as
//   an escape by default);
// - timestamps as 'YYYY-MM-DD HH:MM:SS' with hours 08..22: MariaDB converts TIMESTAMP values
//   from the session time zone, and a time inside a DST gap (02:00-03:00 in Europe) would be
//   rejected or shifted;
// - no statement text contains ';' except as its terminator at the end of a line, so loaders
//   can split on that.

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = mulberry32(20240101);
const int = (lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];

const categories: [string, string][] = [
  ['Electronics', 'Phones, audio and gadgets'],
  ['Books', 'Printed books and guides'],
  ['Clothing', 'Apparel for every season'],
  ['Home and Kitchen', 'Cookware and home goods'],
  ['Sports', 'Fitness and outdoor equipment'],
  ['Toys', 'Games and toys for kids'],
  ['Beauty', 'Skin care and cosmetics'],
  ['Garden', 'Tools and plants for the garden'],
  ['Grocery', 'Coffee, tea and pantry'],
  ['Office Supplies', 'Paper, pens and desk items'],
];

// [name, category index (1-based), price in cents]
const products: [string, number, number][] = [
  ['Wireless Headphones', 1, 12999],
  ['Smartphone X200', 1, 69900],
  ['USB-C Charger', 1, 2499],
  ['Bluetooth Speaker', 1, 5999],
  ['Smart Watch', 1, 19900],
  ['E-Reader', 1, 12900],
  ['The Data Engineer', 2, 3999],
  ['Learning SQL', 2, 2950],
  ['Mystery at Midnight', 2, 1499],
  ['Cooking for Two', 2, 2499],
  ['World Atlas', 2, 3500],
  ['Cotton T-Shirt', 3, 1999],
  ['Denim Jacket', 3, 7950],
  ['Running Shorts', 3, 2499],
  ['Wool Sweater', 3, 5900],
  ['Rain Coat', 3, 8900],
  ['Chef Knife', 4, 4999],
  ['Cast Iron Pan', 4, 3999],
  ['Coffee Maker', 4, 8999],
  ['Blender', 4, 6499],
  ['Ceramic Mug Set', 4, 2199],
  ['Yoga Mat', 5, 2999],
  ['Dumbbell Set', 5, 8999],
  ['Tennis Racket', 5, 11900],
  ['Football', 5, 2499],
  ['Cycling Helmet', 5, 5499],
  ['Building Blocks', 6, 3499],
  ['Puzzle 1000 Pieces', 6, 1899],
  ['Toy Train', 6, 4599],
  ['Plush Bear', 6, 1599],
  ['Board Game Classic', 6, 2999],
  ['Face Cream', 7, 2450],
  ['Shampoo', 7, 899],
  ['Lipstick', 7, 1599],
  ['Perfume', 7, 6900],
  ['Garden Hose', 8, 3299],
  ['Pruning Shears', 8, 1999],
  ['Flower Seeds', 8, 499],
  ['Lawn Mower', 8, 24900],
  ['Watering Can', 8, 1450],
  ['Espresso Beans', 9, 1299],
  ['Green Tea', 9, 699],
  ['Olive Oil', 9, 1150],
  ['Dark Chocolate', 9, 350],
  ['Pasta Pack', 9, 299],
  ['Notebook A5', 10, 499],
  ['Ballpoint Pens', 10, 399],
  ['Desk Lamp', 10, 3499],
  ['Stapler', 10, 899],
  ['Office Chair', 10, 18900],
];

const cities: [string, string][] = [
  ['Berlin', 'Germany'],
  ['Munich', 'Germany'],
  ['Hamburg', 'Germany'],
  ['Paris', 'France'],
  ['Lyon', 'France'],
  ['London', 'United Kingdom'],
  ['Manchester', 'United Kingdom'],
  ['Madrid', 'Spain'],
  ['Barcelona', 'Spain'],
  ['Rome', 'Italy'],
  ['Milan', 'Italy'],
  ['Amsterdam', 'Netherlands'],
  ['Vienna', 'Austria'],
  ['Lisbon', 'Portugal'],
  ['Warsaw', 'Poland'],
];
// Skewed so "the city with the most customers" has one clear answer.
const cityWeights = [14, 7, 6, 11, 5, 10, 5, 8, 6, 6, 5, 5, 4, 4, 4];

const firstNames = [
  'Anna',
  'Ben',
  'Clara',
  'David',
  'Emma',
  'Felix',
  'Greta',
  'Hugo',
  'Ines',
  'Jonas',
  'Karla',
  'Lukas',
  'Maria',
  'Noah',
  'Olivia',
  'Paul',
  'Quentin',
  'Rosa',
  'Sofia',
  'Tom',
  'Ulla',
  'Victor',
  'Wanda',
  'Xavier',
  'Yara',
  'Zoe',
  'Alice',
  'Bruno',
  'Chloe',
  'Diego',
  'Elena',
  'Finn',
  'Giulia',
  'Hannah',
  'Ivan',
  'Julia',
  'Kai',
  'Lea',
  'Marco',
  'Nina',
];
const lastNames = [
  'Schmidt',
  'Muller',
  'Dubois',
  'Martin',
  'Smith',
  'Jones',
  'Garcia',
  'Lopez',
  'Rossi',
  'Bianchi',
  'de Vries',
  'Jansen',
  'Huber',
  'Silva',
  'Kowalski',
  'Nowak',
  'Weber',
  'Bernard',
  'Taylor',
  'Brown',
  'Fernandez',
  'Romano',
  'Bakker',
  'Wagner',
  'Costa',
  'Wisniewski',
  'Becker',
  'Petit',
  'Wilson',
  "O'Brien",
];

function weighted(weights: readonly number[]): number {
  const total = weights.reduce((a, b) => a + b, 0);
  let r = rand() * total;
  for (let i = 0; i < weights.length; i++) {
    r -= weights[i];
    if (r < 0) return i;
  }
  return weights.length - 1;
}

const DAY = 86_400_000;
function stamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ${p(int(8, 22))}:${p(int(0, 59))}:${p(int(0, 59))}`;
}
function dayOf(ts: string): number {
  return Date.parse(`${ts.slice(0, 10)}T00:00:00Z`);
}
const money = (cents: number): string => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
const q = (s: string): string => `'${s.replace(/'/g, "''")}'`;

// Products
const productRows = products.map(([name, cat, price], i) => ({
  id: i + 1,
  name,
  cat,
  price,
  stock: i % 17 === 5 ? 0 : int(0, 250),
  createdAt: stamp(Date.UTC(2023, 0, 1) + int(0, 700) * DAY),
}));

// Customers: created 2023-06 .. 2025-12.
const customerRows: { id: number; first: string; last: string; email: string; city: string; country: string; createdAt: string }[] = [];
const usedEmails = new Set<string>();
for (let i = 1; i <= 100; i++) {
  const first = pick(firstNames);
  const last = pick(lastNames);
  const [city, country] = cities[weighted(cityWeights)];
  const base = `${first}.${last}`.toLowerCase().replace(/[^a-z.]/g, '');
  let email = `${base}@example.com`;
  for (let n = 2; usedEmails.has(email); n++) email = `${base}${n}@example.com`;
  usedEmails.add(email);
  customerRows.push({
    id: i,
    first,
    last,
    email,
    city,
    country,
    createdAt: stamp(Date.UTC(2023, 5, 1) + int(0, 940) * DAY),
  });
}

// Customers who never order (for "customers who never ordered") and products never sold.
const silentCustomers = new Set([7, 23, 38, 51, 64, 77, 89, 95]);
const unsoldProducts = new Set([11, 30, 45]);
const buyers = customerRows.filter((c) => !silentCustomers.has(c.id));
const sellable = productRows.filter((p) => !unsoldProducts.has(p.id));
// Popularity weights so "best-selling product" has a clear answer.
const productWeights = sellable.map((p) => (p.id % 7 === 3 ? 6 : p.price < 3000 ? 3 : 1));

const START = Date.UTC(2024, 0, 1);
const END = Date.UTC(2026, 9, 31);
const CUTOFF = Date.UTC(2026, 9, 1); // orders after this are still in flight

const orderRows: { id: number; customerId: number; status: string; orderedAt: string; total: number }[] = [];
const itemRows: { id: number; orderId: number; productId: number; quantity: number; unitPrice: number }[] = [];
const orderDays = Array.from({ length: 400 }, () => START + int(0, Math.floor((END - START) / DAY)) * DAY).sort((a, b) => a - b);
let itemId = 1;
for (let i = 0; i < orderDays.length; i++) {
  const day = orderDays[i];
  const eligible = buyers.filter((c) => dayOf(c.createdAt) <= day);
  const customer = eligible.length > 0 ? pick(eligible) : buyers[0];
  const orderedAt = stamp(day);
  let status: string;
  const r = rand();
  if (day >= CUTOFF) status = r < 0.4 ? 'pending' : r < 0.7 ? 'paid' : 'shipped';
  else if (day >= CUTOFF - 60 * DAY) status = r < 0.1 ? 'canceled' : r < 0.35 ? 'shipped' : r < 0.45 ? 'paid' : 'delivered';
  else status = r < 0.08 ? 'canceled' : 'delivered';
  const orderId = i + 1;
  const nItems = weighted([2, 3, 4, 3]) + 1;
  const chosen = new Set<number>();
  let total = 0;
  for (let k = 0; k < nItems; k++) {
    const product = sellable[weighted(productWeights)];
    if (chosen.has(product.id)) continue;
    chosen.add(product.id);
    const quantity = product.price < 1000 ? int(1, 6) : weighted([6, 3, 1]) + 1;
    // Occasional 10% discount, so unit_price is not always products.price.
    const unitPrice = rand() < 0.1 ? Math.round(product.price * 0.9) : product.price;
    total += quantity * unitPrice;
    itemRows.push({ id: itemId++, orderId, productId: product.id, quantity, unitPrice });
  }
  orderRows.push({ id: orderId, customerId: customer.id, status, orderedAt, total });
}

// Reviews: by customers of products they bought in delivered orders.
const reviewRows: { id: number; productId: number; customerId: number; rating: number; createdAt: string }[] = [];
const reviewed = new Set<string>();
for (const item of itemRows) {
  const order = orderRows[item.orderId - 1];
  if (order.status !== 'delivered' || rand() > 0.2) continue;
  const key = `${order.customerId}:${item.productId}`;
  if (reviewed.has(key)) continue;
  reviewed.add(key);
  const rating = [1, 2, 3, 4, 5][weighted([1, 1, 3, 6, 6])];
  reviewRows.push({
    id: reviewRows.length + 1,
    productId: item.productId,
    customerId: order.customerId,
    rating,
    createdAt: stamp(Math.min(dayOf(order.orderedAt) + int(3, 40) * DAY, END)),
  });
}

function inserts(table: string, columns: string[], rows: string[][]): string {
  const out: string[] = [];
  for (let i = 0; i < rows.length; i += 100) {
    const chunk = rows
      .slice(i, i + 100)
      .map((r) => `  (${r.join(', ')})`)
      .join(',\n');
    out.push(`INSERT INTO ${table} (${columns.join(', ')}) VALUES\n${chunk};`);
  }
  return out.join('\n\n');
}

const ddl = `-- dbq sample shop database. Generated by scripts/gen-shop-sql.ts; do not edit by hand.
-- Runs unchanged on SQLite, PostgreSQL and MariaDB/MySQL.

CREATE TABLE categories (
  id INTEGER PRIMARY KEY,
  name VARCHAR(100) NOT NULL,
  description VARCHAR(255)
);

CREATE TABLE products (
  id INTEGER PRIMARY KEY,
  name VARCHAR(200) NOT NULL,
  category_id INTEGER NOT NULL,
  price NUMERIC(10,2) NOT NULL,
  stock INTEGER NOT NULL,
  created_at TIMESTAMP NOT NULL,
  FOREIGN KEY (category_id) REFERENCES categories (id)
);

CREATE TABLE customers (
  id INTEGER PRIMARY KEY,
  first_name VARCHAR(100) NOT NULL,
  last_name VARCHAR(100) NOT NULL,
  email VARCHAR(255) NOT NULL UNIQUE,
  city VARCHAR(100) NOT NULL,
  country VARCHAR(100) NOT NULL,
  created_at TIMESTAMP NOT NULL
);

CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL,
  status VARCHAR(20) NOT NULL CHECK (status IN ('pending', 'paid', 'shipped', 'delivered', 'canceled')),
  ordered_at TIMESTAMP NOT NULL,
  total NUMERIC(10,2) NOT NULL,
  FOREIGN KEY (customer_id) REFERENCES customers (id)
);

CREATE TABLE order_items (
  id INTEGER PRIMARY KEY,
  order_id INTEGER NOT NULL,
  product_id INTEGER NOT NULL,
  quantity INTEGER NOT NULL,
  unit_price NUMERIC(10,2) NOT NULL,
  FOREIGN KEY (order_id) REFERENCES orders (id),
  FOREIGN KEY (product_id) REFERENCES products (id)
);

CREATE TABLE reviews (
  id INTEGER PRIMARY KEY,
  product_id INTEGER NOT NULL,
  customer_id INTEGER NOT NULL,
  rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
  created_at TIMESTAMP NOT NULL,
  FOREIGN KEY (product_id) REFERENCES products (id),
  FOREIGN KEY (customer_id) REFERENCES customers (id)
);

CREATE INDEX idx_products_category ON products (category_id);
CREATE INDEX idx_orders_customer ON orders (customer_id);
CREATE INDEX idx_order_items_order ON order_items (order_id);
CREATE INDEX idx_order_items_product ON order_items (product_id);
CREATE INDEX idx_reviews_product ON reviews (product_id);
`;

const body = [
  inserts(
    'categories',
    ['id', 'name', 'description'],
    categories.map(([n, d], i) => [String(i + 1), q(n), q(d)]),
  ),
  inserts(
    'products',
    ['id', 'name', 'category_id', 'price', 'stock', 'created_at'],
    productRows.map((p) => [String(p.id), q(p.name), String(p.cat), money(p.price), String(p.stock), q(p.createdAt)]),
  ),
  inserts(
    'customers',
    ['id', 'first_name', 'last_name', 'email', 'city', 'country', 'created_at'],
    customerRows.map((c) => [String(c.id), q(c.first), q(c.last), q(c.email), q(c.city), q(c.country), q(c.createdAt)]),
  ),
  inserts(
    'orders',
    ['id', 'customer_id', 'status', 'ordered_at', 'total'],
    orderRows.map((o) => [String(o.id), String(o.customerId), q(o.status), q(o.orderedAt), money(o.total)]),
  ),
  inserts(
    'order_items',
    ['id', 'order_id', 'product_id', 'quantity', 'unit_price'],
    itemRows.map((it) => [String(it.id), String(it.orderId), String(it.productId), String(it.quantity), money(it.unitPrice)]),
  ),
  inserts(
    'reviews',
    ['id', 'product_id', 'customer_id', 'rating', 'created_at'],
    reviewRows.map((r) => [String(r.id), String(r.productId), String(r.customerId), String(r.rating), q(r.createdAt)]),
  ),
].join('\n\n');

process.stdout.write(`${ddl}\n${body}\n`);
