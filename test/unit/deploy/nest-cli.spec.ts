import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, readText } from './deploy-files';

interface NestProject {
  type: 'application' | 'library';
  root: string;
  sourceRoot: string;
  entryFile: string;
}

/**
 * nest-cli.json names the monorepo's projects for Nest's tooling (generators, `nest info`, editors); the
 * build itself is scripts/build.mjs. The file must list every Nest app and every lib the tree holds, no
 * more, so it cannot drift from the tree. A lib is named by its import alias (`@mgw/registry` beside the
 * `registry` app).
 */
describe('nest-cli.json', () => {
  const config = JSON.parse(readText('nest-cli.json')) as {
    monorepo: boolean;
    root: string;
    projects: Record<string, NestProject>;
  };
  const dirs = (parent: string): string[] =>
    readdirSync(join(ROOT, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);

  it('is a monorepo rooted at the gateway', () => {
    expect(config.monorepo).toBe(true);
    expect(config.root).toBe('apps/gateway');
  });

  it('lists every Nest app (the web console aside, a Vite page) and every lib, each where it lives', () => {
    const apps = dirs('apps').filter((app) => existsSync(join(ROOT, 'apps', app, 'src', 'main.ts')));
    const expected = [
      ...apps.map((app) => [app, 'application', `apps/${app}`, 'main'] as const),
      ...dirs('libs').map((lib) => [`@mgw/${lib}`, 'library', `libs/${lib}`, 'index'] as const),
    ].sort(([a], [b]) => a.localeCompare(b));
    const listed = Object.entries(config.projects)
      .map(([name, project]) => [name, project.type, project.root, project.entryFile] as const)
      .sort(([a], [b]) => a.localeCompare(b));
    expect(listed).toEqual(expected);
    for (const project of Object.values(config.projects)) {
      expect(existsSync(join(ROOT, project.sourceRoot, `${project.entryFile}.ts`))).toBe(true);
    }
  });
});
