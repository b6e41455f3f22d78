/**
 * A small dependency-free SVG chart writer for the report: grouped bars (categories × series) or
 * lines (numeric x, one line per series). Output is deterministic for a given input.
 */

export interface ChartSeries {
  name: string;
  points: { x: string | number; y: number }[];
}

export interface ChartSpec {
  kind: 'bar' | 'line';
  title: string;
  xLabel?: string;
  yLabel?: string;
  series: ChartSeries[];
  width?: number;
  height?: number;
}

const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A "nice" axis maximum and tick step covering `max` (1, 2, 2.5 or 5 × 10^n). */
export function niceScale(max: number, ticks = 5): { max: number; step: number } {
  if (!(max > 0)) return { max: 1, step: 0.2 };
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 2.5, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
  return { max: Math.ceil(max / step - 1e-9) * step, step };
}

/** Short tick labels: 1200 → "1.2k", 3500000 → "3.5M". */
export function formatNumber(v: number): string {
  const a = Math.abs(v);
  const fmt = (n: number, s: string) => `${Number(n.toFixed(2))}${s}`;
  if (a >= 1e9) return fmt(v / 1e9, 'G');
  if (a >= 1e6) return fmt(v / 1e6, 'M');
  if (a >= 1e3) return fmt(v / 1e3, 'k');
  return fmt(v, '');
}

export function renderChart(spec: ChartSpec): string {
  const W = spec.width ?? 720;
  const H = spec.height ?? 360;
  const m = { top: 40, right: 20, bottom: 70, left: 70 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const ys = spec.series.flatMap((s) => s.points.map((p) => p.y)).filter((y) => Number.isFinite(y));
  const { max, step } = niceScale(Math.max(0, ...ys));
  const yPos = (y: number) => m.top + ph - (y / max) * ph;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(spec.title)}</text>`);
  for (let v = 0; v <= max + 1e-9; v += step) {
    const y = yPos(v).toFixed(1);
    out.push(`<line x1="${m.left}" y1="${y}" x2="${m.left + pw}" y2="${y}" stroke="#e0e0e0"/>`);
    out.push(`<text x="${m.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${formatNumber(v)}</text>`);
  }
  out.push(`<line x1="${m.left}" y1="${m.top + ph}" x2="${m.left + pw}" y2="${m.top + ph}" stroke="#333"/>`);
  out.push(`<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${m.top + ph}" stroke="#333"/>`);
  if (spec.kind === 'bar') {
    const cats = [...new Set(spec.series.flatMap((s) => s.points.map((p) => String(p.x))))];
    const band = pw / Math.max(1, cats.length);
    const bw = (band * 0.8) / Math.max(1, spec.series.length);
    cats.forEach((cat, ci) => {
      const x0 = m.left + ci * band + band * 0.1;
      spec.series.forEach((s, si) => {
        const p = s.points.find((q) => String(q.x) === cat);
        if (p === undefined || !Number.isFinite(p.y)) return;
        const y = yPos(p.y);
        out.push(
          `<rect x="${(x0 + si * bw).toFixed(1)}" y="${y.toFixed(1)}" width="${(bw * 0.95).toFixed(1)}" height="${(m.top + ph - y).toFixed(1)}" fill="${PALETTE[si % PALETTE.length]}"><title>${escapeXml(`${s.name} ${cat}: ${p.y}`)}</title></rect>`,
        );
      });
      out.push(`<text x="${(x0 + band * 0.4).toFixed(1)}" y="${m.top + ph + 16}" text-anchor="middle">${escapeXml(cat)}</text>`);
    });
  } else {
    const xs = spec.series.flatMap((s) => s.points.map((p) => Number(p.x)));
    const xmin = Math.min(...xs);
    const xmax = Math.max(...xs);
    const xPos = (x: number) => m.left + (xmax === xmin ? pw / 2 : ((x - xmin) / (xmax - xmin)) * pw);
    for (const x of [...new Set(xs)].sort((a, b) => a - b))
      out.push(`<text x="${xPos(x).toFixed(1)}" y="${m.top + ph + 16}" text-anchor="middle">${formatNumber(x)}</text>`);
    spec.series.forEach((s, si) => {
      const pts = s.points.map((p) => `${xPos(Number(p.x)).toFixed(1)},${yPos(p.y).toFixed(1)}`);
      const color = PALETTE[si % PALETTE.length];
      out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.join(' ')}"/>`);
      for (const pt of pts) out.push(`<circle cx="${pt.split(',')[0]}" cy="${pt.split(',')[1]}" r="3" fill="${color}"/>`);
    });
  }
  if (spec.xLabel !== undefined)
    out.push(`<text x="${m.left + pw / 2}" y="${m.top + ph + 36}" text-anchor="middle">${escapeXml(spec.xLabel)}</text>`);
  if (spec.yLabel !== undefined)
    out.push(
      `<text x="16" y="${m.top + ph / 2}" text-anchor="middle" transform="rotate(-90 16 ${m.top + ph / 2})">${escapeXml(spec.yLabel)}</text>`,
    );
  // legend, left to right under the axis label
  let lx = m.left;
  spec.series.forEach((s, si) => {
    out.push(`<rect x="${lx}" y="${H - 18}" width="10" height="10" fill="${PALETTE[si % PALETTE.length]}"/>`);
    out.push(`<text x="${lx + 14}" y="${H - 9}">${escapeXml(s.name)}</text>`);
    lx += 24 + s.name.length * 7;
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
