import { raw } from 'hono/html';
import type { Child, FC } from 'hono/jsx';
import type { DashboardUser } from './session.js';

const CSS = `
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#1d2330;background:#f5f6f8}
header{background:#1d2330;color:#fff;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.4rem 1rem;align-items:center}
header a{color:#cfd6e4;text-decoration:none}header a.on{color:#fff;font-weight:600}header .who{margin-left:auto;color:#9aa5b8}
header form{display:inline}header button{background:none;border:1px solid #56607a;color:#cfd6e4;border-radius:4px;padding:.15rem .5rem;cursor:pointer}
main{padding:1rem;max-width:1200px;margin:0 auto}h1{font-size:1.3rem;margin:.2rem 0 1rem}h2{font-size:1.05rem;margin:1.4rem 0 .5rem}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:.6rem}.card{background:#fff;border:1px solid #dfe3ea;border-radius:6px;padding:.6rem .8rem}
.card b{display:block;font-size:1.3rem}.scroll{overflow-x:auto;background:#fff;border:1px solid #dfe3ea;border-radius:6px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #edf0f4;vertical-align:top}th{background:#fafbfc;font-weight:600;white-space:nowrap}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;word-break:break-all}pre{white-space:pre-wrap;word-break:break-all;margin:0;max-height:16rem;overflow:auto;font-size:12px}
.badge{display:inline-block;padding:0 .45rem;border-radius:9px;font-size:12px;font-weight:600;background:#e6e9ef}
.ok,.complete,.delivered,.closed,.pass,.healthy,.success{background:#dff3e4;color:#17692e}.failed,.open,.fail,.unhealthy,.failure{background:#fbe0e0;color:#a11c1c}
.pending,.queued,.processing,.half-open,.degraded,.running,.retried{background:#fff2cc;color:#7a5a00}
form.inline{display:inline}button,.button{font:inherit;padding:.25rem .7rem;border:1px solid #b8c0ce;border-radius:4px;background:#fff;cursor:pointer}
.filters{display:flex;flex-wrap:wrap;gap:.5rem;align-items:end;margin-bottom:.7rem}.filters label{display:flex;flex-direction:column;font-size:12px;color:#5b6578}
input,select{font:inherit;padding:.25rem .4rem;border:1px solid #b8c0ce;border-radius:4px}.pager{margin:.6rem 0;display:flex;gap:1rem}
.flash{background:#e8f1ff;border:1px solid #b6d0ff;padding:.5rem .8rem;border-radius:6px;margin-bottom:1rem}.error{background:#fdecec;border-color:#f3b5b5}
.signin{max-width:420px;margin:10vh auto;background:#fff;border:1px solid #dfe3ea;border-radius:8px;padding:1.2rem}.signin input{width:100%;margin:.4rem 0 .8rem}
svg{max-width:100%;height:auto;background:#fff;border:1px solid #dfe3ea;border-radius:6px}.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:.8rem}
.muted{color:#6b7588}
`;

const NAV: Array<[string, string, boolean]> = [
  ['/dashboard', 'Overview', false],
  ['/dashboard/launches', 'Launches', false],
  ['/dashboard/deliveries', 'Deliveries', false],
  ['/dashboard/dead-letters', 'Dead letters', true],
  ['/dashboard/breakers', 'Breakers', true],
];

/** The page frame: navigation, who is signed in, the sign-out form (with its CSRF token). */
export const Layout: FC<{ title: string; user?: DashboardUser; path?: string; flash?: string; children?: Child }> = ({ title, user, path, flash, children }) => (
  <>
    {raw('<!doctype html>')}
    <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>{`${title} · Launch service`}</title>
      <style>{CSS}</style>
    </head>
    <body>
      {user && (
        <header>
          <strong>Launch service</strong>
          {NAV.filter(([, , admin]) => !admin || user.isAdmin).map(([href, label]) => (
            <a href={href} class={path === href ? 'on' : ''}>
              {label}
            </a>
          ))}
          <span class="who">
            {user.owner}
            {user.isAdmin ? ' (admin)' : ''}
          </span>
          <form method="post" action="/dashboard/sign-out">
            <input type="hidden" name="_csrf" value={user.csrf} />
            <button type="submit">Sign out</button>
          </form>
        </header>
      )}
      <main>
        {flash && <div class="flash">{flash}</div>}
        {children}
      </main>
    </body>
    </html>
  </>
);

export const Badge: FC<{ value: string }> = ({ value }) => <span class={`badge ${value}`}>{value}</span>;

/** A hidden CSRF field for a state-changing form. */
export const Csrf: FC<{ user: DashboardUser }> = ({ user }) => <input type="hidden" name="_csrf" value={user.csrf} />;

export const time = (ms: number | null | undefined) => (ms === null || ms === undefined ? '—' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19));
export const duration = (ms: number | null | undefined) => (ms === null || ms === undefined ? '—' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

/** One filter of a list page: a labelled select whose first option, "any", clears it. */
export const FilterSelect: FC<{ label: string; name: string; options: readonly string[]; selected: string | undefined }> = ({ label, name, options, selected }) => (
  <label>
    {label}
    <select name={name}>
      <option value="">any</option>
      {options.map((o) => (
        <option value={o} selected={selected === o}>
          {o}
        </option>
      ))}
    </select>
  </label>
);

/** Links to the previous and next page, keeping the filters. */
export const Pager: FC<{ base: string; params: Record<string, string | undefined>; offset: number; limit: number; shown: number }> = ({ base, params, offset, limit, shown }) => {
  const href = (o: number) => {
    const q = new URLSearchParams(Object.entries({ ...params, offset: String(o) }).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ''));
    return `${base}?${q.toString()}`;
  };
  return (
    <div class="pager">
      {offset > 0 ? <a href={href(Math.max(0, offset - limit))}>← newer</a> : <span class="muted">← newer</span>}
      <span class="muted">
        {shown === 0 ? 'none' : `${offset + 1}–${offset + shown}`}
      </span>
      {shown === limit ? <a href={href(offset + limit)}>older →</a> : <span class="muted">older →</span>}
    </div>
  );
};
