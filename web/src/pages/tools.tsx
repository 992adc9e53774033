// The Tools page: the curated tools the signed-in user may run, each with a form generated
// from its parameters and the result in the console's table; admins also create, edit (a new
// version) and delete them. Everything goes through /ui/api/tools, which calls the same core
// functions as /api/tools.
import { useEffect, useState } from 'preact/hooks';
import { api, handleSignedOut } from '../api.ts';
import { ErrorBox, Layout } from '../components/layout.tsx';
import { message, RunForm, type RunResult } from '../components/tool-run-form.tsx';
import { ToolEditor, type ToolDefinition } from '../components/tool-editor.tsx';
import { useMe } from '../hooks.ts';

type Tool = ToolDefinition;

export function ToolsPage() {
  const { me } = useMe();
  const [tools, setTools] = useState<Tool[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [editing, setEditing] = useState<Tool | 'new' | null>(null);
  const isAdmin = me?.user.role === 'admin';

  const load = async () => {
    try {
      setTools((await api.get<{ tools: Tool[] }>('/tools')).tools);
    } catch (err) {
      if (!handleSignedOut(err)) setError(message(err));
    }
  };
  useEffect(() => {
    if (me) void load();
  }, [me]);

  const remove = async (tool: Tool) => {
    if (!confirm(`Delete tool ${tool.name}? Its runs stay in history.`)) return;
    try {
      await api.del(`/tools/${tool.name}`);
      await load();
    } catch (err) {
      if (!handleSignedOut(err)) setError(message(err));
    }
  };

  return (
    <Layout me={me} wide>
      <div class="page-head">
        <div>
          <h1>Tools</h1>
          <p class="muted">
            Named statements with typed parameters, defined by admins. The same tools are in the API (/api/tools) and in every MCP client's
            tool list.
          </p>
        </div>
        {isAdmin && editing === null && (
          <button type="button" class="btn btn-primary" onClick={() => setEditing('new')}>
            New tool
          </button>
        )}
      </div>
      <ErrorBox error={error} />
      {editing !== null && (
        <ToolEditor
          tool={editing === 'new' ? null : editing}
          onCancel={() => setEditing(null)}
          onSaved={(name, tryIt) => {
            setEditing(null);
            // "Save and try it" opens the saved version's run form.
            if (tryIt) setOpen(name);
            void load();
          }}
        />
      )}
      {tools !== null && tools.length === 0 && (
        <p class="card muted">No tools yet.{isAdmin ? ' Create one with New tool.' : ' An admin can define some.'}</p>
      )}
      <ul class="tool-list">
        {tools?.map((t) => (
          <li key={t.name} class="card">
            <div class="tool-head">
              <div>
                <h2>
                  <code>{t.name}</code> <small class="muted">v{t.version}</small>
                </h2>
                <p>{t.description}</p>
              </div>
              <div class="actions">
                <button type="button" class="btn" aria-expanded={open === t.name} onClick={() => setOpen(open === t.name ? null : t.name)}>
                  {open === t.name ? 'Close' : 'Run…'}
                </button>
                {isAdmin && (
                  <>
                    <button type="button" class="btn" onClick={() => setEditing(t)}>
                      Edit
                    </button>
                    <button type="button" class="btn btn-danger" onClick={() => remove(t)}>
                      Delete
                    </button>
                  </>
                )}
              </div>
            </div>
            {open === t.name && (
              <RunForm
                label={`Run ${t.name}`}
                parameters={t.parameters}
                maxRows={t.maxRows}
                run={(params) => api.post<RunResult>(`/tools/${t.name}/run`, { params })}
              />
            )}
          </li>
        ))}
      </ul>
    </Layout>
  );
}
