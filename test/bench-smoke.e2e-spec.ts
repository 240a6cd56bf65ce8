import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..');
const SCENARIOS = ['S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'R1', 'R4', 'M1', 'M4', 'S9'];

interface Result {
  ok?: number;
  errors: number;
  corrupted?: number;
  streams?: number;
  complete?: number;
  open?: number;
  deltas?: number;
}
interface Side {
  result: Result;
  cpu: Record<string, number | null> | null;
}
interface Report {
  meta: { node: string; redis: string; cores: number };
  scenarios: Array<{
    id: string;
    intact: boolean;
    error?: string;
    rows: unknown[];
    gateway: Side;
    baseline: Side;
  }>;
}

/**
 * The benchmark harness in its smoke mode (a few seconds per scenario), so it never rots: every scenario
 * runs against the gateway and the baseline, and nothing is lost, reordered or failed. Speed targets are not
 * checked here — timings on a shared CI machine are noise.
 */
describe('npm run bench -- --smoke', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mgw-bench-smoke-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('runs every scenario end to end and every request and stream arrives intact', async () => {
    const out = join(dir, 'smoke.json');
    const child = spawn(process.execPath, ['bench/run.mjs', '--smoke', '--out', out], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((done) => child.once('exit', done));
    expect({ code, output: code === 0 ? '' : output }).toEqual({ code: 0, output: '' });

    const report = JSON.parse(await readFile(out, 'utf8')) as Report;
    expect(report.meta).toMatchObject({ node: process.version, cores: expect.any(Number) });
    expect(report.meta.redis).toMatch(/^\d+\.\d+/);
    expect(report.scenarios.map((s) => s.id)).toEqual(SCENARIOS);
    for (const scenario of report.scenarios) {
      expect({ id: scenario.id, error: scenario.error, intact: scenario.intact }).toEqual({
        id: scenario.id,
        error: undefined,
        intact: true,
      });
      expect(scenario.rows.length).toBeGreaterThan(0);
      for (const side of [scenario.gateway, scenario.baseline]) {
        expect(side.result.errors).toBe(0);
        expect(side.result.corrupted ?? 0).toBe(0);
        expect(side.cpu).not.toBeNull();
      }
      expect(Object.keys(scenario.gateway.cpu ?? {})).toEqual(
        expect.arrayContaining(['gateway', 'registry', 'redis', 'load']),
      );
    }
    const byId = new Map(report.scenarios.map((s) => [s.id, s]));
    // Streams: every one complete with exactly its text (S3, S4, R4, M4), or all open at once and flowing (S5).
    for (const id of ['S3', 'S4', 'R4', 'M4']) {
      for (const side of [byId.get(id)!.gateway, byId.get(id)!.baseline]) {
        expect(side.result.complete).toBe(side.result.streams);
        expect(side.result.deltas).toBeGreaterThan(0);
      }
    }
    for (const side of [byId.get('S5')!.gateway, byId.get('S5')!.baseline]) {
      expect(side.result.open).toBe(side.result.streams);
    }
    expect(output).toContain('| scenario | figure | target | gateway | baseline | added | ratio | met |');
  }, 600_000);
});
