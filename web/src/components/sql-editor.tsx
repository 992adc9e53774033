// CodeMirror 6 SQL editor: highlighting and completion for the connection's dialect, with the
// connection's tables and columns as completion schema. Ctrl/Cmd+Enter runs. Tab is left to
// the browser (no indentWithTab), so keyboard users can move past the editor.
import { autocompletion, closeCompletion } from '@codemirror/autocomplete';
import { sql, MySQL, PostgreSQL, SQLite, type SQLNamespace } from '@codemirror/lang-sql';
import { Compartment, EditorState, Prec } from '@codemirror/state';
import {
  Decoration,
  EditorView,
  keymap,
  MatchDecorator,
  placeholder,
  ViewPlugin,
  type DecorationSet,
  type ViewUpdate,
} from '@codemirror/view';
import { basicSetup } from 'codemirror';
import { useEffect, useRef } from 'preact/hooks';

export type Dialect = 'postgres' | 'mysql' | 'sqlite';

export interface EditorHandle {
  getValue(): string;
  setValue(text: string): void;
  focus(): void;
  insert(text: string): void;
  closeCompletion(): void;
}

const DIALECTS = { postgres: PostgreSQL, mysql: MySQL, sqlite: SQLite };

// A curated tool's `:name` placeholders (not a PostgreSQL `::type` cast), marked so the
// parameters a statement takes stand out from its SQL.
const paramMarks = new MatchDecorator({ regexp: /(?<![:\w]):[A-Za-z_]\w*(?:\.\w+)?/g, decoration: Decoration.mark({ class: 'cm-param' }) });
const paramHighlight = ViewPlugin.fromClass(
  class {
    decorations: DecorationSet;
    constructor(view: EditorView) {
      this.decorations = paramMarks.createDeco(view);
    }
    update(u: ViewUpdate) {
      this.decorations = paramMarks.updateDeco(u, this.decorations);
    }
  },
  { decorations: (v) => v.decorations },
);

function language(dialect: Dialect, schema: SQLNamespace) {
  return sql({ dialect: DIALECTS[dialect], schema, upperCaseKeywords: true });
}

export function SqlEditor(props: {
  labelledBy: string;
  initial: string;
  dialect: Dialect;
  schema: SQLNamespace;
  onRun: () => void;
  onChange?: (text: string) => void;
  /** Mark `:name` placeholders (the tool editor). */
  params?: boolean;
  handle: { current: EditorHandle | null };
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const lang = useRef(new Compartment());
  const onRun = useRef(props.onRun);
  const onChange = useRef(props.onChange);
  onRun.current = props.onRun;
  onChange.current = props.onChange;

  useEffect(() => {
    // Running answers the question the completion popup was offering to help with; left open it
    // covers the result's first rows.
    const run = (v: EditorView) => {
      closeCompletion(v);
      onRun.current();
      return true;
    };
    const v = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: props.initial,
        extensions: [
          Prec.highest(keymap.of([{ key: 'Mod-Enter', run, preventDefault: true }])),
          basicSetup,
          // CodeMirror's icons are glyphs (□ for a column, 🔑 for a keyword) that render as empty
          // boxes without a matching font; the option's label and type say enough.
          autocompletion({ icons: false }),
          lang.current.of(language(props.dialect, props.schema)),
          placeholder('SELECT … (Ctrl+Enter to run)'),
          EditorView.lineWrapping,
          ...(props.params ? [paramHighlight] : []),
          EditorView.contentAttributes.of({ 'aria-labelledby': props.labelledBy, 'aria-multiline': 'true', role: 'textbox' }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) onChange.current?.(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    props.handle.current = {
      getValue: () => v.state.doc.toString(),
      setValue: (text) => {
        v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: text }, selection: { anchor: text.length } });
      },
      focus: () => v.focus(),
      insert: (text) => {
        v.dispatch(v.state.replaceSelection(text));
        v.focus();
      },
      closeCompletion: () => closeCompletion(v),
    };
    return () => {
      v.destroy();
      props.handle.current = null;
    };
  }, []);

  useEffect(() => {
    view.current?.dispatch({ effects: lang.current.reconfigure(language(props.dialect, props.schema)) });
  }, [props.dialect, props.schema]);

  return <div class="editor" ref={host} />;
}
