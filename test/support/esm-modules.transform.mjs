// jest transformer for node_modules. The specs require() packages published only as ES modules (NestJS 12,
// the AI SDK, zod's locales, and what those import in turn); Node 20.19+ and 22.12+ load them natively, but
// jest's own module loader does so only from Node 24.9. So a file Node would load as an ES module — `.mjs`,
// or `.js` under a package.json that says "type": "module", by the nearest package.json as Node decides — is
// compiled to CommonJS with swc, like our sources; every other file passes through untouched.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import swcJest from '@swc/jest';

const swc = swcJest.createTransformer({
  jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' },
  module: { type: 'commonjs' },
});

/** Directory → whether the nearest package.json above it says "type": "module". */
const moduleScope = new Map();

function isModuleScope(dir) {
  const known = moduleScope.get(dir);
  if (known !== undefined) return known;
  const manifest = join(dir, 'package.json');
  let result;
  if (existsSync(manifest)) {
    result = JSON.parse(readFileSync(manifest, 'utf8')).type === 'module';
  } else {
    const parent = dirname(dir);
    result = parent !== dir && isModuleScope(parent);
  }
  moduleScope.set(dir, result);
  return result;
}

function isEsModule(filename) {
  const extension = extname(filename);
  if (extension === '.mjs') return true;
  return extension === '.js' && isModuleScope(dirname(filename));
}

export default {
  canInstrument: false,
  getCacheKey(source, filename, options) {
    return `${isEsModule(filename) ? 'esm' : 'cjs'}:${swc.getCacheKey(source, filename, options)}`;
  },
  process(source, filename, options) {
    return isEsModule(filename) ? swc.process(source, filename, options) : { code: source };
  },
};
