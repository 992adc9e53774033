// The SQLite statement runner: one child process per pooled "connection", forked by
// sqlite.ts. better-sqlite3 is synchronous and has no interrupt API, and a worker thread
// cannot be stopped while it is inside sqlite3_step (an endless `WITH RECURSIVE` never comes
// back to JavaScript), so a timeout or cancel SIGKILLs this process; sqlite's journal makes
// the kill safe for the database file. Plain .mjs so the child starts without a TypeScript
// loader (~120 ms instead of ~300 ms after every kill).
//
// Protocol (IPC, serialization 'advanced'): the parent sends {id, op, ...}, the child answers
// {id, ok: true, result} or {id, ok: false, error: {kind, code, message}} where kind is
// 'permission' | 'open' | 'sqlite' | 'driver'. The child announces itself with {ready: true}.
// Values are encoded here per the API contract: INTEGER past 2^53 → string, BLOB → base64,
// ±Infinity → string.

import Database from 'better-sqlite3';

const file = process.argv[2];

/** The read-only handle is kept between reads; anything that could leave state behind on it
 * (a non-row statement such as BEGIN, ATTACH or a PRAGMA assignment, an open transaction)
 * closes it. Writes get a fresh handle each time, closed afterwards: temp tables, PRAGMAs,
 * ATTACHed databases and open transactions die with it. */
let readHandle = null;
/** The one open stream cursor: {db, readOnly, stmt, iterator, budget}. */
let cursor = null;

class RunnerError extends Error {
  constructor(kind, message, code = null) {
    super(message);
    this.kind = kind;
    this.code = code;
  }
}

function open(readOnly) {
  try {
    if (!readOnly) return new Database(file, { fileMustExist: true });
    if (!readHandle) {
      readHandle = new Database(file, { readonly: true, fileMustExist: true });
      readHandle.pragma('query_only = 1');
    }
    return readHandle;
  } catch (err) {
    throw new RunnerError('open', err.message, err.code ?? null);
  }
}

function done(db, readOnly, keep) {
  if (!readOnly) {
    db.close();
  } else if (!keep || db.inTransaction) {
    db.close();
    if (db === readHandle) readHandle = null;
  }
}

function bind(params) {
  return params.map((p) => {
    if (typeof p === 'boolean') return p ? 1 : 0;
    if (typeof p === 'number' && Number.isSafeInteger(p)) return BigInt(p);
    if (p !== null && typeof p === 'object') return JSON.stringify(p);
    return p;
  });
}

function encode(value) {
  switch (typeof value) {
    case 'bigint':
      return value >= -9007199254740991n && value <= 9007199254740991n ? Number(value) : value.toString();
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'object':
      if (value === null) return null;
      return Buffer.from(value).toString('base64');
    default:
      return value;
  }
}

function size(row) {
  let n = 2;
  for (const v of row) n += v === null ? 5 : typeof v === 'string' ? v.length + 3 : 12;
  return n;
}

// Blanks between the words may hold comments, as the guard (which reads comments as blanks)
// allows: `EXPLAIN /* plan */ QUERY PLAN …`. A gap reads one way only: a
// block comment ends at its first `*/` (the lazy `/\*[\s\S]*?\*/` could stretch over the
// next ones when a later word failed, so 22 empty comments before a SELECT took 35 ms and each
// one more doubled it), and `GAP*;?GAP*` is `GAP*(?:;GAP*)?` (blanks split two ways cost cubic
// time: 2,000 spaces, 22 ms).
const GAP = String.raw`(?:\s|/\*[^*]*\*+(?:[^*/][^*]*\*+)*/|--[^\n]*(?:\n|$))`;
const EXPLAIN_QUERY_PLAN = new RegExp(String.raw`^${GAP}*EXPLAIN${GAP}+QUERY${GAP}+PLAN${GAP}`, 'i');
const PRAGMA_QUERY = new RegExp(String.raw`^${GAP}*PRAGMA${GAP}+[\w."\x60]+(?:${GAP}*\.${GAP}*[\w."\x60]+)?${GAP}*(?:;${GAP}*)?$`, 'i');
/** Only a head is tested: a statement's plan-or-PRAGMA shape shows in its first words. */
const HEAD = 2048;

function reportsOnly(sql) {
  return EXPLAIN_QUERY_PLAN.test(sql.slice(0, HEAD)) || (sql.length <= HEAD && PRAGMA_QUERY.test(sql));
}

function prepare(db, sql, readOnly, timeoutMs, params) {
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(timeoutMs))}`);
  const stmt = db.prepare(sql);
  // EXPLAIN QUERY PLAN of a write and the query form of a PRAGMA such as journal_mode only
  // report, yet SQLite calls them not read-only; the guard vetted them, and the handle is
  // read-only with query_only on, so nothing can write through them.
  if (readOnly && !stmt.readonly && !reportsOnly(sql)) throw new RunnerError('permission', 'statement is not read-only');
  if (!stmt.reader) refuseOtherFiles(db, sql, params);
  return stmt;
}

/** ATTACH opens any file (the metadata store, another workspace's database), VACUUM INTO
 * writes a copy anywhere: the guard refuses both for every role (guard-sqlite.ts), and this is
 * the second layer. better-sqlite3 offers no authorizer callback and no
 * sqlite3_limit(SQLITE_LIMIT_ATTACHED), and sqlite3_stmt_readonly is true for ATTACH, so
 * SQLite's own compiled program is read instead: ATTACH and DETACH call the internal
 * functions sqlite_attach/sqlite_detach, VACUUM INTO is a Vacuum opcode with a file-name
 * register (P2). Only statements that return no rows can be any of them, so reads pay nothing.
 * Extensions: loadExtension is never called here, and without it SQLite's load_extension()
 * answers "not authorized". */
function refuseOtherFiles(db, sql, params) {
  for (const op of db.prepare(`EXPLAIN ${sql}`).all(...bind(params))) {
    const fn = typeof op.p4 === 'string' ? op.p4 : '';
    if (fn.startsWith('sqlite_attach(') || fn.startsWith('sqlite_detach(')) {
      throw new RunnerError('permission', 'ATTACH and DETACH are not allowed: a connection reaches its own database file only');
    }
    if (op.opcode === 'Vacuum' && op.p2 !== 0) {
      throw new RunnerError('permission', 'VACUUM INTO is not allowed: it writes a copy of the database to another file');
    }
  }
}

function columnsOf(stmt) {
  return stmt.columns().map((c) => ({ name: c.name, type: c.type ?? '' }));
}

/** Reads up to `limit` rows within `maxBytes`; `more` says rows were left. */
function readBatch(iterator, limit, maxBytes) {
  const rows = [];
  let bytes = 0;
  for (;;) {
    if (rows.length >= limit) return { rows, more: true, bytes };
    const next = iterator.next();
    if (next.done) return { rows, more: false, bytes };
    const row = next.value.map(encode);
    const s = size(row);
    if (bytes + s > maxBytes) {
      return { rows, more: true, bytes };
    }
    bytes += s;
    rows.push(row);
  }
}

const handlers = {
  execute({ sql, params, readOnly, maxRows, maxBytes, timeoutMs }) {
    const db = open(readOnly);
    let keep = false;
    try {
      const stmt = prepare(db, sql, readOnly, timeoutMs, params);
      if (!stmt.reader) {
        const info = stmt.run(...bind(params));
        return { columns: [], rows: [], truncated: false, affectedRows: info.changes };
      }
      keep = true;
      stmt.safeIntegers(true).raw(true);
      const iterator = stmt.iterate(...bind(params));
      try {
        const { rows, more } = readBatch(iterator, maxRows, maxBytes);
        // One row past maxRows tells whether the result was cut.
        const truncated = more && (rows.length < maxRows || !iterator.next().done);
        return { columns: columnsOf(stmt), rows, truncated, affectedRows: null };
      } finally {
        iterator.return();
      }
    } finally {
      done(db, readOnly, keep);
    }
  },

  streamOpen({ sql, params, readOnly, timeoutMs, batch }) {
    const db = open(readOnly);
    try {
      const stmt = prepare(db, sql, readOnly, timeoutMs, params);
      if (!stmt.reader) {
        stmt.run(...bind(params));
        done(db, readOnly, false);
        return { columns: [], rows: [], more: false };
      }
      stmt.safeIntegers(true).raw(true);
      cursor = { db, readOnly, iterator: stmt.iterate(...bind(params)) };
      const first = readBatch(cursor.iterator, batch, Infinity);
      if (!first.more) closeCursor();
      return { columns: columnsOf(stmt), rows: first.rows, more: first.more };
    } catch (err) {
      if (!cursor) done(db, readOnly, false);
      throw err;
    }
  },

  streamNext({ batch }) {
    if (!cursor) return { rows: [], more: false };
    const next = readBatch(cursor.iterator, batch, Infinity);
    if (!next.more) closeCursor();
    return next;
  },

  streamClose() {
    closeCursor();
    return null;
  },

  validate({ sql }) {
    // prepare() compiles against the schema without running anything; one statement only.
    // SQLite itself says whether the statement writes (sqlite3_stmt_readonly).
    return { readonly: open(true).prepare(sql).readonly };
  },

  listTables() {
    const db = open(true);
    const tables = db
      .prepare(
        /* SQL */ `SELECT name, type FROM sqlite_master
         WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name`,
      )
      .all();
    const columnsOf = db.prepare(/* SQL */ `SELECT name, type, "notnull" AS nn, pk FROM pragma_table_info(?) ORDER BY cid`);
    const keysOf = db.prepare(
      /* SQL */ `SELECT id, seq, "table" AS ref, "from" AS col, "to" AS refcol FROM pragma_foreign_key_list(?) ORDER BY id, seq`,
    );
    return tables.map((t) => {
      const columns = columnsOf.all(t.name).map((c) => ({
        name: c.name,
        type: c.type ?? '',
        nullable: !c.nn && !(c.pk && /^integer$/i.test(c.type ?? '')),
        primaryKey: c.pk > 0,
      }));
      const byId = new Map();
      for (const k of keysOf.all(t.name)) {
        if (!byId.has(k.id)) byId.set(k.id, { columns: [], refTable: k.ref, refSchema: null, refColumns: [] });
        const fk = byId.get(k.id);
        fk.columns.push(k.col);
        fk.refColumns.push(k.refcol);
      }
      for (const fk of byId.values()) {
        // REFERENCES t without columns means t's primary key.
        if (fk.refColumns.some((c) => c === null)) {
          fk.refColumns = columnsOf
            .all(fk.refTable)
            .filter((c) => c.pk > 0)
            .sort((a, b) => a.pk - b.pk)
            .map((c) => c.name);
        }
      }
      return { schema: null, name: t.name, kind: t.type === 'view' ? 'view' : 'table', columns, foreignKeys: [...byId.values()] };
    });
  },

  // search_objects: the name pattern is bound (lower-case LIKE, `!` escapes). SQLite has no
  // stored functions, so kind "function" finds nothing.
  searchObjects({ kind, like }) {
    const db = open(true);
    const userObject = /* SQL */ `m.name NOT LIKE 'sqlite!_%' ESCAPE '!'`;
    if (kind === 'table' || kind === 'view') {
      return db
        .prepare(
          /* SQL */ `SELECT m.name, (SELECT count(*) FROM pragma_table_info(m.name)) AS columnCount FROM sqlite_master m
           WHERE m.type = ? AND ${userObject} AND lower(m.name) LIKE ? ESCAPE '!'`,
        )
        .all(kind, like)
        .map((r) => ({ kind, schema: null, name: r.name, columnCount: r.columnCount }));
    }
    if (kind === 'column') {
      return db
        .prepare(
          /* SQL */ `SELECT m.name AS tbl, p.name, p.type, p."notnull" AS nn, p.pk FROM sqlite_master m, pragma_table_info(m.name) p
           WHERE m.type IN ('table', 'view') AND ${userObject} AND lower(p.name) LIKE ? ESCAPE '!'`,
        )
        .all(like)
        .map((c) => ({
          kind,
          schema: null,
          table: c.tbl,
          name: c.name,
          type: c.type ?? '',
          nullable: !c.nn && !(c.pk && /^integer$/i.test(c.type ?? '')),
          primaryKey: c.pk > 0,
        }));
    }
    if (kind === 'index') {
      const columnsOf = db.prepare(/* SQL */ `SELECT coalesce(name, '(expression)') AS name FROM pragma_index_info(?) ORDER BY seqno`);
      return db
        .prepare(
          /* SQL */ `SELECT m.name, m.tbl_name AS tbl, (SELECT l."unique" FROM pragma_index_list(m.tbl_name) l WHERE l.name = m.name) AS uniq
           FROM sqlite_master m WHERE m.type = 'index' AND ${userObject} AND lower(m.name) LIKE ? ESCAPE '!'`,
        )
        .all(like)
        .map((r) => ({
          kind,
          schema: null,
          table: r.tbl,
          name: r.name,
          unique: r.uniq === 1,
          columns: columnsOf.all(r.name).map((c) => c.name),
        }));
    }
    return [];
  },

  test() {
    let db;
    try {
      db = new Database(file, { readonly: true, fileMustExist: true });
    } catch (err) {
      throw new RunnerError('open', err.message, err.code ?? null);
    }
    try {
      // Reading the schema fails with SQLITE_NOTADB when the file is not a database.
      db.prepare('SELECT count(*) FROM sqlite_master').get();
      return { version: db.prepare('SELECT sqlite_version() AS v').get().v };
    } finally {
      db.close();
    }
  },
};

function closeCursor() {
  if (!cursor) return;
  const { db, readOnly, iterator } = cursor;
  cursor = null;
  try {
    iterator.return();
  } finally {
    done(db, readOnly, true);
  }
}

function describe(err) {
  if (err instanceof RunnerError) return { kind: err.kind, code: err.code, message: err.message };
  if (err && typeof err.code === 'string' && err.code.startsWith('SQLITE_')) {
    return { kind: 'sqlite', code: err.code, message: err.message };
  }
  // better-sqlite3's own refusals: RangeError for more than one statement or a wrong number
  // of parameters, TypeError for unbindable values.
  return { kind: 'driver', code: null, message: err instanceof Error ? err.message : String(err) };
}

// The parent went away (crash, SIGKILL): nothing else would end this process, and nobody is
// left to read what it would say. A statement that was running when the parent died finishes
// first (sqlite3_step cannot be interrupted from here); its reply then meets a closed channel
// (EPIPE, or ERR_IPC_CHANNEL_CLOSED once the disconnect is seen), which unhandled printed a
// stack on the terminal the parent had shared and exited 1.
function parentGone() {
  process.exit(0);
}

function send(message) {
  if (!process.connected) return parentGone();
  process.send(message, undefined, undefined, (err) => {
    if (err) parentGone();
  });
}

process.on('disconnect', parentGone);
// stdout and stderr are the parent's (stdio 'inherit'): a pipe whose reader died with it.
process.stdout.on('error', parentGone);
process.stderr.on('error', parentGone);

process.on('message', (msg) => {
  let reply;
  try {
    reply = { id: msg.id, ok: true, result: handlers[msg.op](msg) };
  } catch (err) {
    reply = { id: msg.id, ok: false, error: describe(err) };
  }
  send(reply);
});

send({ ready: true });
