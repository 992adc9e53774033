// A dependency-free docs page: it fetches the workspace's openapi.json (relative URL, so the
// path form /w/{slug}/docs and the root both work) and lists every operation with its
// request and response schemas. No CDN, no bundled UI framework. Summaries and descriptions
// are written in Markdown (`code`, **bold**, [links](…)); those three are rendered, on text
// escaped first, so the page does not show raw backticks.
export const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>dbq API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d2330}
h1{margin-bottom:0}code,pre{font:13px ui-monospace,monospace;background:#f3f4f6;border-radius:4px}
pre{padding:.75rem;overflow:auto}section{border-top:1px solid #e5e7eb;padding:.5rem 0}
.m{display:inline-block;min-width:4.5rem;font-weight:600}.get{color:#0a7}.post{color:#06c}.patch{color:#a60}.delete{color:#c22}
details summary{cursor:pointer}
</style></head><body>
<h1>dbq API</h1><p id="intro">Loading the OpenAPI description…</p><div id="ops"></div>
<script>
const base = location.pathname.replace(/(\\/api)?\\/docs\\/?$/, '');
const esc = t => String(t).replace(/[&<>"]/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
const md = t => esc(t)
  .replace(/\x60([^\x60]+)\x60/g, '<code>$1</code>')
  .replace(/\\*\\*([^*]+)\\*\\*/g, '<strong>$1</strong>')
  .replace(/\\[([^\\]]+)\\]\\((https?:[^)\\s]+)\\)/g, '<a href="$2">$1</a>');
fetch(base + '/api/openapi.json').then(r => r.json()).then(doc => {
  document.getElementById('intro').innerHTML = 'Base URL: <code>' + location.origin + base + '/api</code> · send <code>Authorization: Bearer dbq_…</code> · <a href="' + base + '/api/openapi.json">openapi.json</a>';
  const ops = document.getElementById('ops');
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const [method, op] of Object.entries(item)) {
      const s = document.createElement('section');
      const h = document.createElement('h3');
      h.innerHTML = '<span class="m ' + method + '">' + method.toUpperCase() + '</span> <code></code>';
      h.querySelector('code').textContent = path;
      s.appendChild(h);
      const p = document.createElement('p'); p.className = 'summary'; p.innerHTML = md(op.summary || ''); s.appendChild(p);
      if (op.description && op.description !== op.summary) { const d = document.createElement('p'); d.className = 'description'; d.innerHTML = md(op.description); s.appendChild(d); }
      const add = (label, obj) => { if (!obj) return; const d = document.createElement('details'); const sm = document.createElement('summary'); sm.textContent = label; const pre = document.createElement('pre'); pre.textContent = JSON.stringify(obj, null, 2); d.append(sm, pre); s.appendChild(d); };
      add('Request body', op.requestBody && op.requestBody.content);
      add('Parameters', op.parameters);
      add('Responses', op.responses);
      ops.appendChild(s);
    }
  }
}).catch(e => { document.getElementById('intro').textContent = 'Could not load openapi.json: ' + e; });
</script></body></html>`;
