// The markdown table of a run: one row per figure, gateway next to the baseline of the same run.

function format(value, unit = '') {
  if (value === undefined || value === null || Number.isNaN(value)) return '–';
  const abs = Math.abs(value);
  const digits = unit === 'ms' ? (abs < 10 ? 2 : 1) : abs >= 100 || Number.isInteger(value) ? 0 : 1;
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

const verdict = (met) => (met === null ? '' : met ? '✅' : '❌');

function cpuLine(label, cpu) {
  if (!cpu) return `${label}: –`;
  const parts = Object.entries(cpu)
    .filter(([, cores]) => cores !== null)
    .map(([name, cores]) => `${name} ${cores.toFixed(2)}`);
  return `${label}: ${parts.join(', ')}`;
}

/** What went wrong on each side, from the load generator's own counts. */
function problems(scenario) {
  return ['gateway', 'baseline']
    .map((side) => {
      const r = scenario[side].result;
      const detail = { errors: r.errors, corrupted: r.corrupted, statuses: r.statuses, first: r.firstError };
      return `${side} ${JSON.stringify(detail)}`;
    })
    .join('; ');
}

export function markdown(report) {
  const { meta } = report;
  const lines = [
    `Node ${meta.node} · Redis ${meta.redis} · ${meta.cores} cores (${meta.cpuModel}) · ` +
      `load average at start ${meta.loadAverage.map((l) => l.toFixed(2)).join(' ')}` +
      (meta.args.smoke ? ' · **smoke run: timings are not meaningful**' : ''),
    '',
    '| scenario | figure | target | gateway | baseline | added | ratio | met |',
    '|---|---|---|---:|---:|---:|---:|:-:|',
  ];
  for (const scenario of report.scenarios) {
    if (scenario.error) {
      lines.push(
        `| ${scenario.id} ${scenario.title} | **failed**: ${scenario.error.split('\n')[0]} | | | | | | ❌ |`,
      );
      continue;
    }
    scenario.rows.forEach((row, index) => {
      const name = index === 0 ? `${scenario.id} ${scenario.title}` : '';
      const unit = row.unit && row.unit !== 'ms' ? ` ${row.unit}` : row.unit === 'ms' ? ' ms' : '';
      const added =
        row.added === undefined ? '–' : `${row.added > 0 ? '+' : ''}${format(row.added, row.unit)}`;
      const ratio = row.ratio === undefined || !Number.isFinite(row.ratio) ? '–' : `${row.ratio.toFixed(2)}×`;
      lines.push(
        `| ${name} | ${row.figure}${unit} | ${row.target} | ${format(row.gateway, row.unit)} | ` +
          `${format(row.baseline, row.unit)} | ${added} | ${ratio} | ${verdict(row.met)} |`,
      );
    });
  }
  lines.push('', 'CPU in cores (1.00 = one core busy) over each measured window:', '');
  for (const scenario of report.scenarios) {
    if (scenario.error) continue;
    lines.push(
      `- ${scenario.id}: ${cpuLine('gateway path', scenario.gateway.cpu)} · ${cpuLine('baseline', scenario.baseline.cpu)}` +
        (scenario.intact ? '' : ` · **lost, reordered or failed requests**: ${problems(scenario)}`),
    );
  }
  return `${lines.join('\n')}\n`;
}
