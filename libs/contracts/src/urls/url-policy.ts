/**
 * Which URLs a model's requests may carry in their parts (an image's `url`), as the catalog's `urlInputs`
 * says. An upstream that fetches URLs (vLLM does, for vision models) fetches them from inside the
 * platform's network, so a URL that names an internal address turns it into a proxy to that address.
 *
 * - `public` (the default): `data:` URLs, and `http(s)` URLs whose host is a public address or a
 *   public-looking name, written plainly (no credentials, no backslash, no whitespace or control character).
 * - `any`: `data:` URLs and every `http(s)` URL: for a model whose upstream fetches nothing, or fetches
 *   through a proxy of its own.
 * - `none`: `data:` URLs only.
 *
 * Other schemes (`file:`, `ftp:`, `gopher:`, `javascript:` …) never pass. Names are classified, never
 * resolved: a public-looking name that resolves to an internal address (DNS rebinding) is the fetching
 * upstream's to guard.
 */
export const URL_INPUT_POLICIES = ['public', 'any', 'none'] as const;
export type UrlInputPolicy = (typeof URL_INPUT_POLICIES)[number];
export const DEFAULT_URL_INPUT_POLICY: UrlInputPolicy = 'public';

/**
 * Suffixes of names that only mean something inside a network: `localhost`, mDNS and Kubernetes (`.local`,
 * `.cluster.local`, `.svc`), cloud-internal zones (`.internal`, where `metadata.google.internal` lives), home
 * and office networks (`.lan`, `.home`, `.home.arpa`, `.corp`, `.intranet`, `.private`, `.localdomain`), and
 * reverse-lookup names (`.arpa`). The other special-use names (`.test`, `.invalid`, `.example`) resolve
 * nowhere, so they reach nothing either way and pass.
 */
const INTERNAL_SUFFIXES: readonly string[] = [
  'localhost',
  'local',
  'localdomain',
  'internal',
  'intranet',
  'private',
  'corp',
  'home',
  'lan',
  'svc',
  'arpa',
];

/** Cloud metadata services known by a public-looking name. */
const METADATA_NAMES: ReadonlySet<string> = new Set(['metadata.goog', 'metadata.tencentyun.com']);

/** `[first, prefix length]` of the IPv4 blocks that are not public unicast (RFC 6890's special-purpose ones). */
const IPV4_SPECIAL: ReadonlyArray<readonly [string, number, string]> = [
  ['0.0.0.0', 8, 'a "this network" address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a shared (CGNAT) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address (cloud metadata lives there)'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'an IETF protocol address'],
  ['192.0.2.0', 24, 'a documentation address'],
  ['192.88.99.0', 24, 'a 6to4 relay address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved or broadcast address'],
];

const DOTTED_QUAD = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function ipv4Number(text: string): number | null {
  const match = DOTTED_QUAD.exec(text);
  if (match === null) return null;
  let value = 0;
  for (let i = 1; i <= 4; i++) {
    const octet = Number(match[i]);
    if (octet > 255) return null;
    value = value * 256 + octet;
  }
  return value;
}

const IPV4_BLOCKS = IPV4_SPECIAL.map(([first, bits, what]) => {
  const size = 2 ** (32 - bits);
  return { first: ipv4Number(first)!, size, what };
});

/** Why an IPv4 address (as a 32-bit number) is not a public one, or null. */
function ipv4Problem(address: number): string | null {
  for (const block of IPV4_BLOCKS) {
    if (address >= block.first && address < block.first + block.size) return block.what;
  }
  return null;
}

/** The eight 16-bit groups of an IPv6 address (as WHATWG serialises it, or with a dotted tail), or null. */
function ipv6Groups(text: string): number[] | null {
  let source = text;
  const dotted = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(source);
  if (dotted !== null) {
    const v4 = ipv4Number(dotted[1]!);
    if (v4 === null) return null;
    source = `${source.slice(0, dotted.index)}${Math.floor(v4 / 65536).toString(16)}:${(v4 % 65536).toString(16)}`;
  }
  const halves = source.split('::');
  if (halves.length > 2) return null;
  const parse = (half: string): number[] | null => {
    if (half === '') return [];
    const groups: number[] = [];
    for (const group of half.split(':')) {
      if (!/^[0-9a-f]{1,4}$/i.test(group)) return null;
      groups.push(parseInt(group, 16));
    }
    return groups;
  };
  const head = parse(halves[0]!);
  if (halves.length === 1) return head?.length === 8 ? head : null;
  const tail = parse(halves[1]!);
  if (head === null || tail === null || head.length + tail.length > 7) return null;
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

const embedded = (groups: readonly number[]): number => groups[6]! * 65536 + groups[7]!;

/** Why an IPv6 address is not a public one, or null. An address that embeds an IPv4 one is judged by it. */
function ipv6Problem(groups: readonly number[]): string | null {
  const [a, b, c, d, e, f] = groups as [number, number, number, number, number, number];
  const zeroTo = (n: number): boolean => groups.slice(0, n).every((group) => group === 0);
  if (zeroTo(8)) return 'the unspecified address';
  if (zeroTo(7) && groups[7] === 1) return 'a loopback address';
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), ::ffff:0:a.b.c.d (SIIT), 64:ff9b::a.b.c.d (NAT64).
  const mapped = zeroTo(5) && f === 0xffff;
  const compatible = zeroTo(6);
  const siit = zeroTo(4) && e === 0xffff && f === 0;
  const nat64 = a === 0x64 && b === 0xff9b && c === 0 && d === 0 && e === 0 && f === 0;
  if (mapped || compatible || siit || nat64) {
    const problem = ipv4Problem(embedded(groups));
    return problem === null ? null : `${problem}, embedded in an IPv6 one`;
  }
  if (a === 0x2002) {
    // 6to4: 2002:AABB:CCDD::/48 routes to AA.BB.CC.DD.
    const problem = ipv4Problem(b * 65536 + c);
    return problem === null ? null : `${problem}, embedded in a 6to4 one`;
  }
  if (a < 0x2000 || a > 0x3fff) {
    if (a >= 0xfc00 && a <= 0xfdff) return 'a unique local (private) address';
    if (a >= 0xfe80 && a <= 0xfebf) return 'a link-local address';
    if (a >= 0xff00) return 'a multicast address';
    return 'a reserved address (not global unicast)';
  }
  if (a === 0x2001 && b < 0x200) return 'an IETF protocol address (Teredo and others)';
  if (a === 0x2001 && b === 0xdb8) return 'a documentation address';
  if (a === 0x3fff && b < 0x1000) return 'a documentation address';
  return null;
}

/** Why a host name (lower-case, as WHATWG gives it) is not a public-looking one, or null. */
function nameProblem(host: string): string | null {
  // One trailing dot is the root: `localhost.` is `localhost`.
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  const labels = name.split('.');
  if (labels.includes('')) return 'a name with an empty label';
  if (labels.length === 1) return 'a single-label name, which only resolves inside a network';
  if (METADATA_NAMES.has(name)) return 'the name of a cloud metadata service';
  for (let i = labels.length - 1; i >= 1; i--) {
    const suffix = labels.slice(i).join('.');
    if (INTERNAL_SUFFIXES.includes(suffix))
      return `a name under .${suffix}, which only resolves inside a network`;
  }
  return null;
}

/** Why `host` (WHATWG's `hostname`) is not a public address or public-looking name, or null. */
export function hostProblem(host: string): string | null {
  if (host.startsWith('[')) {
    const groups = ipv6Groups(host.slice(1, -1));
    return groups === null ? 'an IPv6 address it cannot read' : ipv6Problem(groups);
  }
  const v4 = ipv4Number(host.endsWith('.') ? host.slice(0, -1) : host);
  if (v4 !== null) return ipv4Problem(v4);
  return nameProblem(host);
}

/** The part of a URL between `//` and the path: where credentials would be. */
function authorityOf(url: string): string {
  const start = url.indexOf('//');
  if (start < 0) return '';
  const rest = url.slice(start + 2);
  const end = rest.search(/[/?#]/);
  return end < 0 ? rest : rest.slice(0, end);
}

/**
 * Text that URL parsers read differently, so that the upstream's could find another host than WHATWG's:
 * a backslash (WHATWG reads it as `/`, others as part of the host), control characters (WHATWG drops tabs
 * and newlines), and in the authority `@` (credentials), `%` (WHATWG decodes it in a host) or a space.
 */
// eslint-disable-next-line no-control-regex
const AMBIGUOUS = /[\\\u0000-\u001f\u007f]/;
const AMBIGUOUS_IN_AUTHORITY = /[@% ]/;

/**
 * Why `url` may not be sent to a model whose catalog says `policy`, or null when it may. Pure: nothing is
 * resolved or fetched. The URL is read as WHATWG's `new URL()` reads it, which turns every IPv4 notation
 * (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`) into its dotted form and IPv6 into its short form.
 */
export function urlInputProblem(url: string, policy: UrlInputPolicy): string | null {
  // Checked on the text: a data URL is up to the body's size, and parsing one would copy it.
  if (/^data:/i.test(url)) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'it is not a valid URL';
  }
  const scheme = parsed.protocol;
  if (scheme === 'data:') return null;
  if (policy === 'none') return 'this model takes no URL inputs; send the content inline as a data: URL';
  if (scheme !== 'http:' && scheme !== 'https:') {
    return `the ${scheme.slice(0, -1)}: scheme is not accepted (only http, https and data URLs)`;
  }
  if (policy === 'any') return null;
  if (parsed.username !== '' || parsed.password !== '') return 'the URL carries credentials';
  if (AMBIGUOUS.test(url) || AMBIGUOUS_IN_AUTHORITY.test(authorityOf(url))) {
    return 'the URL is not written plainly (a backslash, a control character, or @, % or a space in its host part)';
  }
  const problem = hostProblem(parsed.hostname);
  return problem === null ? null : `its host ${parsed.hostname} is ${problem}`;
}
