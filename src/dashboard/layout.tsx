import { raw } from 'hono/html';
import type { Child, FC } from 'hono/jsx';
import type { DashboardUser } from './session.js';

const CSS = `
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#1d2330;background:#f5f6f8}
header{background:#1d2330;color:#fff;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.4rem 1rem;align-items:center}
header a{color:#cfd6e4;text-decoration:none}header a.on{color:#fff;font-weight:600}header .who{margin-left:auto;color:#9aa5b8}
header form{display:inline}header button{background:none;border:1px solid #56607a;color:#cfd6e4;border-radius:4px;padding:.15rem .5rem;cursor:pointer}
main{padding:1rem;max-width:1200px;margin:0 auto}h1{font-size:1.3rem;margin:.2rem 0 1rem}h2{font-size:1.05rem;margin:1.1rem 0 .4rem}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:.6rem}.card{background:#fff;border:1px solid #dfe3ea;border-radius:6px;padding:.6rem .8rem}
.card b{display:block;font-size:1.3rem}.scroll{overflow-x:auto;background:#fff;border:1px solid #dfe3ea;border-radius:6px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #edf0f4;vertical-align:top}th{background:#fafbfc;font-weight:600;white-space:nowrap}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;word-break:break-all}pre{white-space:pre-wrap;word-break:break-all;margin:0;max-height:16rem;overflow:auto;font-size:12px}
.badge{display:inline-block;padding:0 .45rem;border-radius:9px;font-size:12px;font-weight:600;background:#e6e9ef}
.ok,.complete,.deposit,.delivered,.closed,.pass,.healthy,.success{background:#dff3e4;color:#17692e}.failed,.open,.fail,.unhealthy,.failure{background:#fbe0e0;color:#a11c1c}
.pending,.queued,.reserve,.processing,.half-open,.degraded,.running,.waiting,.retried{background:#fff2cc;color:#7a5a00}.blocked,.paused{background:#fde2c8;color:#8a4b00}.canceled{background:#eceef2;color:#5b6578}
form.inline{display:inline}button,.button{font:inherit;padding:.25rem .7rem;border:1px solid #b8c0ce;border-radius:4px;background:#fff;cursor:pointer}
.filters{display:flex;flex-wrap:wrap;gap:.5rem;align-items:end;margin-bottom:.7rem}.filters label{display:flex;flex-direction:column;font-size:12px;color:#5b6578}
input,select{font:inherit;padding:.25rem .4rem;border:1px solid #b8c0ce;border-radius:4px}.pager{margin:.6rem 0;display:flex;gap:1rem}
.flash{background:#e8f1ff;border:1px solid #b6d0ff;padding:.5rem .8rem;border-radius:6px;margin-bottom:1rem}.error{background:#fdecec;border-color:#f3b5b5}
.signin{max-width:420px;margin:10vh auto;background:#fff;border:1px solid #dfe3ea;border-radius:8px;padding:1.2rem}.signin input{width:100%;margin:.4rem 0 .8rem}
svg{max-width:100%;height:auto;background:#fff;border:1px solid #dfe3ea;border-radius:6px}.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:.8rem}
.muted{color:#6b7588}
.fields{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,340px),1fr));gap:.45rem 1.2rem;margin:0;background:#fff;border:1px solid #dfe3ea;border-radius:6px;padding:.7rem .9rem}
.fields div{min-width:0}.fields dt{font-size:12px;color:#5b6578}.fields dd{margin:0;overflow-wrap:anywhere}.fields .wide{grid-column:1/-1}
.group{margin:.6rem 0 .25rem;font-size:.95rem}.addr{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;user-select:all;overflow-wrap:anywhere}
.addr+a{margin-left:.3rem;font-size:12px;text-decoration:none}.fields details{grid-column:1/-1}#summary{grid-template-columns:repeat(auto-fill,minmax(min(100%,170px),1fr))}#summary [data-field=token]{grid-column:span 2}table.rows{min-width:720px}table.deliveries button{padding:0 .5rem;font-size:12px}table.deliveries td{padding:.25rem .6rem}.fields details .fields{border:0;padding:.3rem 0 0}abbr[title]{text-decoration:underline dotted;cursor:help}
ol.timeline{list-style:none;margin:0;padding:.4rem .9rem;background:#fff;border:1px solid #dfe3ea;border-radius:6px}
ol.timeline li{position:relative;padding:.35rem 0 .35rem 1.4rem;border-left:2px solid #dfe3ea;margin-left:.4rem}
ol.timeline li::before{content:'';position:absolute;left:-7px;top:.65rem;width:12px;height:12px;border-radius:50%;background:#b8c0ce}
ol.timeline li.step-complete::before{background:#2e9e4f}ol.timeline li.step-failed::before{background:#c62828}ol.timeline li.step-running::before,ol.timeline li.step-waiting::before{background:#d9a400}
.step-head{display:flex;flex-wrap:wrap;gap:.2rem .6rem;align-items:baseline}.step-name{font-weight:600}
.alert{border-left:4px solid #c62828}.warn{background:#fff7e0;border:1px solid #f0d58a;border-left:4px solid #d9a400;padding:.5rem .8rem;border-radius:6px;margin:.5rem 0}
.warn ul,.alert ul{margin:.3rem 0 0;padding-left:1.2rem}tr.hot td{background:#fff4f4}tr.hot td:first-child{border-left:4px solid #c62828}
details>summary{cursor:pointer;color:#1f5fbf}details[open]>summary{margin-bottom:.3rem}
.latest details{display:inline-block;margin-left:.5rem}.latest details[open]{display:block;margin-left:0}
@media (max-width:640px){table.deliveries,table.deliveries tbody,table.deliveries tr,table.deliveries td{display:block}table.deliveries tr:first-child{display:none}table.deliveries tr{border-bottom:1px solid #dfe3ea;padding:.3rem 0}table.deliveries td{border:0;padding:.1rem .6rem}}
`;

const NAV: Array<[string, string, boolean]> = [
  ['/dashboard', 'Overview', false],
  ['/dashboard/launches', 'Launches', false],
  ['/dashboard/deliveries', 'Deliveries', false],
  ['/dashboard/endpoints', 'Endpoints', false],
  ['/dashboard/funding', 'Funding', false],
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

/** An address or signature whole, monospaced and selectable with one click, with an explorer link. */
export const Address: FC<{ value: string; href?: string }> = ({ value, href }) => (
  <>
    <span class="addr">{value}</span>
    {href && (
      <a href={href} rel="noreferrer" target="_blank" title="Open in the explorer" aria-label="Open in the explorer">
        ↗
      </a>
    )}
  </>
);

/** Elapsed time in words: "4 s", "6 min", "2 h 5 min", "3 days". */
export const inWords = (ms: number) => {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return min % 60 === 0 ? `${h} h` : `${h} h ${min % 60} min`;
  return `${Math.round(h / 24)} days`;
};

/** Raw base units as tokens: "1234500000" with 6 decimals is "1,234.5". */
export const formatUnits = (base: string | number | bigint, decimals: number) => {
  const raw = String(base);
  if (!/^\d+$/.test(raw)) return raw;
  const padded = raw.padStart(decimals + 1, '0');
  const whole = padded.slice(0, padded.length - decimals).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const fraction = decimals > 0 ? padded.slice(padded.length - decimals).replace(/0+$/, '') : '';
  return fraction ? `${whole}.${fraction}` : whole;
};

/** An amount in tokens, with its base units in a tooltip. */
export const Amount: FC<{ base: string | number; decimals: number; unit: string }> = ({ base, decimals, unit }) => (
  <abbr title={`${String(base)} base units`} data-base={String(base)}>
    {`${formatUnits(base, decimals)} ${unit}`}
  </abbr>
);

export const time = (ms: number | null | undefined) => (ms === null || ms === undefined ? '—' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19));
export const duration = (ms: number | null | undefined) => (ms === null || ms === undefined ? '—' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

/** One filter of a list page: a labelled select whose first option, "any", clears it. */
export const FilterSelect: FC<{ label: string; name: string; options: readonly string[]; selected: string | undefined; labels?: Record<string, string> }> = ({ label, name, options, selected, labels }) => (
  <label>
    {label}
    <select name={name}>
      <option value="">any</option>
      {options.map((o) => (
        <option value={o} selected={selected === o}>
          {labels?.[o] ?? o}
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
