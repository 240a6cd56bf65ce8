import { hostProblem, urlInputProblem, type UrlInputPolicy } from './url-policy';

const passes = (url: string, policy: UrlInputPolicy = 'public') => urlInputProblem(url, policy);

describe('urlInputProblem', () => {
  describe("under 'public'", () => {
    it.each([
      'https://example.com/a.png',
      'http://example.com/a.png',
      'https://8.8.8.8/x.png',
      'https://images.example.org:8443/cat.jpg?size=large#top',
      'https://example.com./a.png',
      'https://[2606:4700:4700::1111]/x.png',
      'https://[::ffff:8.8.8.8]/x.png',
      'https://[64:ff9b::808:808]/x.png',
      'https://xn--bcher-kva.de/a.png',
      'https://bücher.example.com/a.png',
      'https://example.com/a b.png',
      'https://100.63.255.255/x.png',
      'https://100.128.0.0/x.png',
      'https://172.32.0.1/x.png',
      'https://11.0.0.1/x.png',
      'https://images.example.invalid/cat.png',
    ])('lets %s through', (url) => {
      expect(passes(url)).toBeNull();
    });

    it.each([
      // The four, then their relatives.
      ['http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254 is a link-local address/],
      ['http://[::ffff:127.0.0.1]/', /loopback address, embedded in an IPv6 one/],
      ['http://2130706433/', /127\.0\.0\.1 is a loopback address/],
      ['file:///etc/passwd', /file: scheme is not accepted/],
      // Loopback in every notation WHATWG reads.
      ['http://127.0.0.1/', /loopback/],
      ['http://127.0.0.1.:8080/', /loopback/],
      ['http://0177.0.0.1/', /127\.0\.0\.1 is a loopback/],
      ['http://0x7f.1/', /127\.0\.0\.1 is a loopback/],
      ['http://0x7f000001/', /127\.0\.0\.1 is a loopback/],
      ['http://017700000001/', /127\.0\.0\.1 is a loopback/],
      ['http://127.1/', /127\.0\.0\.1 is a loopback/],
      ['http://127.0.1/', /127\.0\.0\.1 is a loopback/],
      ['http://0x7F.0.0.1/', /loopback/],
      ['http://①②⑦.0.0.1/', /loopback/],
      ['http://[::ffff:7f00:1]/', /loopback address, embedded/],
      ['http://[0:0:0:0:0:ffff:127.0.0.1]/', /loopback address, embedded/],
      ['http://[::127.0.0.1]/', /loopback address, embedded/],
      ['http://[::1]/', /loopback address/],
      ['http://[0:0:0:0:0:0:0:1]/', /loopback address/],
      ['http://[::]/', /unspecified address/],
      // Private, shared, link-local, "this network", multicast, broadcast, reserved.
      ['http://10.0.0.1/', /10\.0\.0\.1 is a private address/],
      ['http://10.1/', /10\.0\.0\.1 is a private address/],
      ['http://167772161/', /10\.0\.0\.1 is a private address/],
      ['http://172.16.0.1/', /private/],
      ['http://172.31.255.255/', /private/],
      ['http://192.168.1.1/', /private/],
      ['http://0xc0.0xa8.1.1/', /192\.168\.1\.1 is a private/],
      ['http://100.64.0.1/', /CGNAT/],
      ['http://100.100.100.200/', /CGNAT/],
      ['http://169.254.0.1/', /link-local/],
      ['http://0.0.0.0/', /this network/],
      ['http://0/', /this network/],
      ['http://224.0.0.1/', /multicast/],
      ['http://239.255.255.250/', /multicast/],
      ['http://255.255.255.255/', /broadcast/],
      ['http://240.0.0.1/', /reserved/],
      ['http://192.0.2.1/', /documentation/],
      ['http://198.18.0.1/', /benchmarking/],
      // IPv6 outside global unicast, and IPv4 hidden in IPv6.
      ['http://[fc00::1]/', /unique local/],
      ['http://[fd12:3456::1]/', /unique local/],
      ['http://[fe80::1]/', /link-local/],
      ['http://[ff02::1]/', /multicast/],
      ['http://[fec0::1]/', /reserved/],
      ['http://[::ffff:169.254.169.254]/', /link-local address.*embedded in an IPv6 one/],
      ['http://[::ffff:a9fe:a9fe]/', /link-local address.*embedded in an IPv6 one/],
      ['http://[::ffff:0:10.0.0.1]/', /private address, embedded/],
      ['http://[64:ff9b::10.0.0.1]/', /private address, embedded/],
      ['http://[64:ff9b::7f00:1]/', /loopback address, embedded/],
      ['http://[2002:7f00:1::]/', /loopback address, embedded in a 6to4/],
      ['http://[2001:db8::1]/', /documentation/],
      ['http://[2001::1]/', /IETF protocol/],
      // Names that only resolve inside a network.
      ['http://localhost:8080/x.png', /single-label/],
      ['http://localhost./x.png', /single-label/],
      ['http://LOCALHOST/x.png', /single-label/],
      ['http://ｌｏｃａｌｈｏｓｔ/x.png', /single-label/],
      ['http://api.localhost/x.png', /under \.localhost/],
      ['http://metadata.google.internal/computeMetadata/v1/', /under \.internal/],
      ['http://metadata/computeMetadata/v1/', /single-label/],
      ['http://instance-data/latest/', /single-label/],
      ['http://instance-data.ec2.internal/latest/', /under \.internal/],
      ['http://metadata.goog/computeMetadata/v1/', /cloud metadata/],
      ['http://intranet/x.png', /single-label/],
      ['http://printer.local/x.png', /under \.local/],
      ['http://api.default.svc/x.png', /under \.svc/],
      ['http://api.default.svc.cluster.local/x.png', /under \.local/],
      ['http://api.default.svc.cluster.local./x.png', /under \.local/],
      ['http://nas.lan/x.png', /under \.lan/],
      ['http://router.home.arpa/x.png', /under \.arpa/],
      ['http://1.0.0.127.in-addr.arpa/x.png', /under \.arpa/],
      ['http://service.corp/x.png', /under \.corp/],
      // Credentials, other schemes, text parsers read differently, not a URL.
      ['http://user:pass@example.com/x.png', /credentials/],
      ['http://user@example.com/x.png', /credentials/],
      ['http://@example.com/x.png', /not written plainly/],
      ['http://example.com\\@127.0.0.1/x.png', /not written plainly/],
      ['http://exam\tple.com/x.png', /not written plainly/],
      ['http://127.0.0.%31/x.png', /not written plainly/],
      ['http://ex%61mple.com/x.png', /not written plainly/],
      ['ftp://example.com/x.png', /ftp: scheme/],
      ['gopher://example.com/x', /gopher: scheme/],
      ['javascript:alert(1)', /javascript: scheme/],
      ['blob:https://example.com/uuid', /blob: scheme/],
      ['ws://example.com/x', /ws: scheme/],
      ['not a url', /not a valid URL/],
      ['http://1.2.3.4.5/', /not a valid URL/],
      ['http://[fe80::1%25eth0]/', /not a valid URL/],
    ])('refuses %s', (url, reason) => {
      expect(passes(url)).toMatch(reason);
    });
  });

  it.each(['public', 'any', 'none'] as const)("lets data: URLs through under '%s'", (policy) => {
    expect(passes('data:image/png;base64,iVBORw0KGgo=', policy)).toBeNull();
    expect(passes('DATA:image/png;base64,iVBORw0KGgo=', policy)).toBeNull();
    expect(passes(' data:image/png;base64,iVBORw0KGgo=', policy)).toBeNull();
  });

  it("lets every http(s) URL through under 'any', and no other scheme", () => {
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:127.0.0.1]/',
      'http://2130706433/',
      'http://localhost:8080/x.png',
      'http://user:pass@10.0.0.1/x.png',
      'https://example.com/a.png',
    ]) {
      expect(passes(url, 'any')).toBeNull();
    }
    expect(passes('file:///etc/passwd', 'any')).toMatch(/file: scheme/);
    expect(passes('gopher://10.0.0.1:6379/_INFO', 'any')).toMatch(/gopher: scheme/);
  });

  it("refuses every URL but data: under 'none'", () => {
    for (const url of ['https://example.com/a.png', 'https://8.8.8.8/x.png', 'file:///etc/passwd']) {
      expect(passes(url, 'none')).toMatch(/takes no URL inputs/);
    }
  });
});

describe('hostProblem', () => {
  it('reads IPv6 with or without a dotted tail alike', () => {
    expect(hostProblem('[::ffff:127.0.0.1]')).toBe(hostProblem('[::ffff:7f00:1]'));
    expect(hostProblem('[1:2:3:4:5:6:7:8:9]')).toMatch(/cannot read/);
    expect(hostProblem('[1::2::3]')).toMatch(/cannot read/);
  });

  it('takes a public name with a trailing dot, and refuses empty labels', () => {
    expect(hostProblem('example.com.')).toBeNull();
    expect(hostProblem('example..com')).toMatch(/empty label/);
  });
});
