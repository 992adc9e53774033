// The PostgreSQL read policy decided from synthetic catalog rows, without a server: which
// overloads a statement can reach depends on the user types in play, and code the planner
// runs on its own (operator families, commutators and negators, a domain's checks) refuses a
// statement that never names it. The real-server attacks are test/readonly-v3-planner-attacks.
import { describe, expect, it } from 'vitest';
import {
  buildPostgresCatalog,
  findRefusal,
  type CatalogFunctionRow,
  type CatalogOperatorRow,
  type CatalogRows,
  type CatalogTypeRow,
  type Collectors,
} from '../src/guard/read-policy.ts';
import type { PostgresReferences } from '../src/guard/verdict.ts';

const INT4 = 23;
const TEXT = 25;
const BOOL = 16;
const EVIL = 9001;
const T_ROW = 9100;
const E_ROW = 9101;
const DOM = 9300;

function fn(oid: number, name: string, args: number[], result: number, extra: Partial<CatalogFunctionRow> = {}): CatalogFunctionRow {
  return {
    oid,
    schema: 'pg_catalog',
    name,
    volatility: 'i',
    requiredArgs: args.length,
    args: args.length,
    extension: null,
    user: false,
    securityDefiner: false,
    unsafeConfig: false,
    language: 'internal',
    internalSymbol: null,
    sqlBody: null,
    plpgsqlDefinition: null,
    defaults: null,
    support: [],
    argTypes: args,
    resultTypes: [result],
    ...extra,
  };
}

/** A user function in C: dbq cannot read it, so it is not known to be safe. */
const userC = (oid: number, name: string, args: number[], result: number) =>
  fn(oid, name, args, result, { schema: 'public', user: true, language: 'c' });

function op(
  oid: number,
  name: string,
  left: number,
  right: number,
  code: number,
  extra: Partial<CatalogOperatorRow> = {},
): CatalogOperatorRow {
  return { oid, schema: 'pg_catalog', name, left, right, result: BOOL, code, restrict: 0, join: 0, commutator: 0, negator: 0, ...extra };
}

function type(oid: number, name: string, extra: Partial<CatalogTypeRow> = {}): CatalogTypeRow {
  return {
    oid,
    schema: 'pg_catalog',
    name,
    builtin: true,
    kind: 'b',
    element: 0,
    base: 0,
    relation: 0,
    functions: [1],
    rangeSubtype: 0,
    rangeFunctions: [],
    rangeFamily: 0,
    multirangeOf: 0,
    domainChecks: null,
    domainDefault: null,
    ...extra,
  };
}

const userType = (oid: number, name: string, extra: Partial<CatalogTypeRow> = {}) =>
  type(oid, name, { schema: 'public', builtin: false, ...extra });

function rows(extra: Partial<CatalogRows> = {}): CatalogRows {
  return {
    functions: [
      fn(1, 'int4eq', [INT4, INT4], BOOL),
      fn(2, 'texteq', [TEXT, TEXT], BOOL),
      fn(3, 'lower', [TEXT], TEXT),
      userC(10, 'evil_eq', [EVIL, EVIL], BOOL),
      userC(11, 'int_cmp_evil', [INT4, INT4], INT4),
      ...(extra.functions ?? []),
    ],
    operators: [
      op(100, '=', INT4, INT4, 1),
      op(101, '=', TEXT, TEXT, 2),
      op(102, '=', EVIL, EVIL, 10, { schema: 'public' }),
      ...(extra.operators ?? []),
    ],
    types: [
      type(BOOL, 'bool'),
      type(INT4, 'int4'),
      type(TEXT, 'text'),
      userType(EVIL, 'evil'),
      userType(T_ROW, 't', { kind: 'c', relation: 9200 }),
      userType(E_ROW, 'e', { kind: 'c', relation: 9201 }),
      ...(extra.types ?? []),
    ],
    casts: extra.casts ?? [],
    families: extra.families ?? [],
    relations: [
      {
        oid: 9200,
        schema: 'public',
        name: 't',
        rowType: T_ROW,
        columnTypes: [],
        children: [],
        indexFamilies: [],
        unsafeForeign: false,
        hasRules: false,
        viewCode: null,
        policyCode: null,
        planCode: null,
        writeCode: null,
      },
      {
        oid: 9201,
        schema: 'public',
        name: 'e',
        rowType: E_ROW,
        columnTypes: [EVIL],
        children: [],
        indexFamilies: [],
        unsafeForeign: false,
        hasRules: false,
        viewCode: null,
        policyCode: null,
        planCode: null,
        writeCode: null,
      },
      ...(extra.relations ?? []),
    ],
  };
}

function refs(partial: Partial<PostgresReferences>): PostgresReferences {
  return { functions: [], attributes: [], operators: [], types: [], literalTypes: [], relations: [], ...partial };
}

/** Stored code (domain checks here) maps to the references its text would parse to. */
function collectors(code: Record<string, PostgresReferences> = {}): Collectors {
  return { sql: (sql) => code[sql], plpgsql: () => undefined };
}

describe('overloads are reached by the types in play', () => {
  const catalog = buildPostgresCatalog(rows(), collectors());

  it('a volatile = on a user type does not touch = on integers', () => {
    expect(findRefusal(catalog, refs({ operators: ['='], relations: ['t'] }))).toBeUndefined();
  });

  it('it is reached once a value of that type is in play', () => {
    expect(findRefusal(catalog, refs({ operators: ['='], relations: ['e'] }))).toMatchObject({ kind: 'operator', name: '=' });
  });

  it('untyped arguments alone may resolve to any candidate', () => {
    expect(findRefusal(catalog, refs({ operators: ['='], relations: ['t'], untypedCalls: ['='] }))).toMatchObject({
      kind: 'operator',
      name: '=',
    });
  });

  it('a name qualified with another schema does not reach it', () => {
    expect(findRefusal(catalog, refs({ operators: ['pg_catalog.='], relations: ['e'] }))).toBeUndefined();
  });

  it('a name the catalog does not hold is refused and marked missing', () => {
    expect(findRefusal(catalog, refs({ functions: ['nope'] }))).toMatchObject({ kind: 'function', missing: true });
  });
});

describe('code the planner reaches without it being written', () => {
  it("a type's operator family with an unsafe member refuses a read of it, no operator written", () => {
    const catalog = buildPostgresCatalog(rows({ families: [{ family: 500, types: [EVIL], operators: [], procs: [10] }] }), collectors());
    expect(findRefusal(catalog, refs({ relations: ['e'] }))).toMatchObject({ kind: 'type', name: 'public.evil' });
    expect(findRefusal(catalog, refs({ relations: ['t'] }))).toBeUndefined();
  });

  it('an operator is judged with its negator and commutator', () => {
    const catalog = buildPostgresCatalog(
      rows({
        functions: [fn(4, 'int4ne', [INT4, INT4], BOOL)],
        operators: [
          op(200, '===', INT4, INT4, 1, { schema: 'public', negator: 201 }),
          op(201, '!==', INT4, INT4, 11, { schema: 'public', negator: 200 }),
        ],
      }),
      collectors(),
    );
    expect(findRefusal(catalog, refs({ operators: ['==='] }))).toMatchObject({ kind: 'operator', name: '===' });
  });

  it('an unsafe selectivity estimator makes its operator unsafe', () => {
    const catalog = buildPostgresCatalog(
      rows({ operators: [op(202, '~~~', INT4, INT4, 1, { schema: 'public', restrict: 11 })] }),
      collectors(),
    );
    expect(findRefusal(catalog, refs({ operators: ['~~~'] }))).toMatchObject({ kind: 'operator' });
  });

  it('an unsafe default operator class of a built-in type refuses every read', () => {
    const catalog = buildPostgresCatalog(rows({ families: [{ family: 501, types: [INT4], operators: [], procs: [11] }] }), collectors());
    expect(catalog.builtinUnsafe).toBe('pg_catalog.int4');
    expect(findRefusal(catalog, refs({}))).toMatchObject({ kind: 'type' });
  });

  it('an unsafe non-default operator class refuses the relations whose indexes use it, and its operators', () => {
    const catalog = buildPostgresCatalog(
      rows({
        families: [{ family: 502, types: [], operators: [300], procs: [11] }],
        operators: [op(300, '<<<', INT4, INT4, 1, { schema: 'public' })],
        relations: [
          {
            oid: 9203,
            schema: 'public',
            name: 'ix',
            rowType: 0,
            columnTypes: [],
            children: [],
            indexFamilies: [502],
            unsafeForeign: false,
            hasRules: false,
            viewCode: null,
            policyCode: null,
            planCode: null,
            writeCode: null,
          },
        ],
      }),
      collectors(),
    );
    expect(catalog.builtinUnsafe).toBeUndefined();
    expect(findRefusal(catalog, refs({ relations: ['ix'] }))).toMatchObject({ kind: 'relation', name: 'ix' });
    expect(findRefusal(catalog, refs({ operators: ['<<<'] }))).toMatchObject({ kind: 'operator' });
    expect(findRefusal(catalog, refs({ operators: ['='], relations: ['t'] }))).toBeUndefined();
  });

  it('a domain over a built-in type is reached through a function taking it, and its check refuses', () => {
    const check = 'SELECT check_dom(VALUE)';
    const catalog = buildPostgresCatalog(
      rows({
        functions: [
          userC(12, 'check_dom', [INT4], BOOL),
          fn(13, 'takes_dom', [DOM], INT4, { schema: 'public', user: false, extension: 'ext' }),
        ],
        types: [userType(DOM, 'dom', { kind: 'd', base: INT4, domainChecks: check })],
      }),
      collectors({ [check]: refs({ functions: ['public.check_dom'] }) }),
    );
    expect(findRefusal(catalog, refs({ functions: ['takes_dom'] }))).toMatchObject({ kind: 'function', name: 'takes_dom' });
    expect(findRefusal(catalog, refs({ functions: ['lower'] }))).toBeUndefined();
  });

  it('a range whose subtype_diff is unsafe is refused wherever its values are in play', () => {
    const catalog = buildPostgresCatalog(
      rows({
        types: [userType(9400, 'evilrange', { kind: 'r', rangeSubtype: INT4, rangeFunctions: [11] })],
        relations: [
          {
            oid: 9202,
            schema: 'public',
            name: 'r',
            rowType: 0,
            columnTypes: [9400],
            children: [],
            indexFamilies: [],
            unsafeForeign: false,
            hasRules: false,
            viewCode: null,
            policyCode: null,
            planCode: null,
            writeCode: null,
          },
        ],
      }),
      collectors(),
    );
    expect(findRefusal(catalog, refs({ relations: ['r'] }))).toMatchObject({ kind: 'type', name: 'public.evilrange' });
    expect(findRefusal(catalog, refs({ literalTypes: ['evilrange'] }))).toMatchObject({ kind: 'type' });
  });

  it('the compact catalog keeps no overloads for plain names and no inert user types', () => {
    const catalog = buildPostgresCatalog(rows(), collectors());
    expect(catalog.functions.get('lower')).toMatchObject({ plain: true, overloads: [] });
    expect(catalog.relations.get('t')).toBeUndefined();
    expect(catalog.relations.get('e')?.[0].values).toContain(EVIL);
  });
});
