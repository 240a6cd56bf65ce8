import { YOUNG_GENERATION_OPTION } from '../../support/stack';
import { readText } from './deploy-files';

/** Every way the apps are started sizes V8's young generation the same (see scripts/start/apps.mjs). */
describe('NODE_OPTIONS of the apps', () => {
  it('is the same in the image, `npm start` (and the benchmarks) and the e2e stack', () => {
    const image = /^\s*NODE_OPTIONS=(\S+)/m.exec(readText('Dockerfile'));
    expect(image?.[1]).toBe(YOUNG_GENERATION_OPTION);
    const launcher = /export const YOUNG_GENERATION_OPTION = '([^']+)';/.exec(
      readText('scripts/start/apps.mjs'),
    );
    expect(launcher?.[1]).toBe(YOUNG_GENERATION_OPTION);
    expect(readText('bench/lib/stack.mjs')).toContain('withNodeOptions(');
  });
});
