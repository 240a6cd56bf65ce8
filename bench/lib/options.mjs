/**
 * A script's `--name value` options as an object of strings (`--rounds 2 --prefill-us 150` →
 * `{ rounds: '2', 'prefill-us': '150' }`); each script reads its own with its own default.
 */
export function commandLineOptions(argv = process.argv.slice(2)) {
  return Object.fromEntries(
    argv
      .join(' ')
      .split('--')
      .filter(Boolean)
      .map((pair) => pair.trim().split(/\s+/)),
  );
}
