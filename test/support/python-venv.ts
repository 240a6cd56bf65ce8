import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The Python scripts the e2e suite runs, and the requirements of their venv. */
export const PYTHON_DIR = resolve(__dirname, '..', 'python');
const VENV = join(PYTHON_DIR, '.venv');
const MAKE_IT = 'run `scripts/python-venv.sh` (CI runs it in .ci/run)';

/**
 * The interpreter of test/python/.venv, made by scripts/python-venv.sh. Throws, naming that command, when
 * the venv is missing or was installed from other requirements than test/python/requirements.txt: a suite
 * that needs the Python SDK fails instead of passing without it.
 */
export function venvPython(): string {
  const python = join(VENV, 'bin', 'python');
  // The script copies the requirements into the venv once the install has succeeded.
  const stamp = join(VENV, 'requirements.txt');
  if (!existsSync(python) || !existsSync(stamp)) {
    throw new Error(`no Python venv with the openai SDK at ${VENV}: ${MAKE_IT}`);
  }
  if (readFileSync(stamp, 'utf8') !== readFileSync(join(PYTHON_DIR, 'requirements.txt'), 'utf8')) {
    throw new Error(
      `${VENV} was installed from other requirements than test/python/requirements.txt: ${MAKE_IT}`,
    );
  }
  return python;
}
