import type { FC } from 'hono/jsx';

export interface Series {
  name: string;
  color: string;
  /** One value per bucket, oldest first; null where there is no data. */
  values: Array<number | null>;
}

const W = 480;
const H = 170;
const PAD = { left: 64, right: 10, top: 24, bottom: 34 };

const nice = (max: number) => {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 5, 10].map((m) => m * p).find((v) => v >= max) ?? max;
};

/** A line chart of per-minute values, computed on the server and drawn as inline SVG. */
export const LineChart: FC<{ title: string; yLabel: string; unit: string; series: Series[]; minutes: number }> = ({ title, yLabel, unit, series, minutes }) => {
  const max = nice(Math.max(0, ...series.flatMap((s) => s.values.filter((v): v is number => v !== null))));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const x = (i: number) => PAD.left + (minutes <= 1 ? 0 : (i / (minutes - 1)) * plotW);
  const y = (v: number) => PAD.top + plotH - (v / max) * plotH;
  const path = (values: Array<number | null>) => {
    let d = '';
    let pen = false;
    values.forEach((v, i) => {
      if (v === null) {
        pen = false;
        return;
      }
      d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
    });
    return d;
  };
  return (
    <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-label={title}>
      <text x={PAD.left} y={14} font-size="12" font-weight="600">
        {title}
      </text>
      {[0, 0.5, 1].map((f) => (
        <g>
          <line x1={PAD.left} x2={W - PAD.right} y1={y(max * f)} y2={y(max * f)} stroke="#edf0f4" />
          <text x={PAD.left - 4} y={y(max * f) + 4} font-size="10" text-anchor="end" fill="#6b7588">
            {`${Number((max * f).toPrecision(3))}${unit}`}
          </text>
        </g>
      ))}
      <line x1={PAD.left} x2={PAD.left} y1={PAD.top} y2={H - PAD.bottom} stroke="#9aa5b8" />
      <line x1={PAD.left} x2={W - PAD.right} y1={H - PAD.bottom} y2={H - PAD.bottom} stroke="#9aa5b8" />
      <text x={12} y={PAD.top + plotH / 2} font-size="10" fill="#6b7588" text-anchor="middle" transform={`rotate(-90 12 ${PAD.top + plotH / 2})`}>
        {yLabel}
      </text>
      {[0, 0.25, 0.5, 0.75, 1].map((f) => {
        const ago = Math.round(minutes * (1 - f));
        return (
          <g>
            <line x1={x(f * (minutes - 1))} x2={x(f * (minutes - 1))} y1={H - PAD.bottom} y2={H - PAD.bottom + 4} stroke="#9aa5b8" />
            <text x={x(f * (minutes - 1))} y={H - PAD.bottom + 14} font-size="10" fill="#6b7588" text-anchor={f === 0 ? 'start' : f === 1 ? 'end' : 'middle'}>
              {ago === 0 ? 'now' : `−${ago}`}
            </text>
          </g>
        );
      })}
      <text x={PAD.left + plotW / 2} y={H - 3} font-size="10" fill="#6b7588" text-anchor="middle">
        minutes ago
      </text>
      {series.map((s, i) => (
        <g>
          <path d={path(s.values)} fill="none" stroke={s.color} stroke-width="2" />
          {s.values.map((v, j) => (v !== null && v > 0 ? <circle cx={x(j).toFixed(1)} cy={y(v).toFixed(1)} r="2.5" fill={s.color} /> : ''))}
          <text x={W - PAD.right - 110} y={14 + i * 12} font-size="10" fill={s.color}>
            {`■ ${s.name}`}
          </text>
        </g>
      ))}
    </svg>
  );
};
