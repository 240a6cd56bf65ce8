import { UpstreamCircuit } from './upstream-circuit';

describe('UpstreamCircuit', () => {
  it('opens after `threshold` failures in a row, and says so once', () => {
    const circuit = new UpstreamCircuit(3);
    expect(circuit.record('failed')).toBe(false);
    expect(circuit.record('failed')).toBe(false);
    expect(circuit.state).toBe('up');
    expect(circuit.record('failed')).toBe(true);
    expect(circuit.state).toBe('out');
    expect(circuit.up).toBe(false);
    // Late reports of requests sent before it opened change nothing.
    expect(circuit.record('failed')).toBe(false);
    expect(circuit.record('answered')).toBe(false);
    expect(circuit.state).toBe('out');
  });

  it('counts only consecutive failures: any answer in between resets the count', () => {
    const circuit = new UpstreamCircuit(2);
    circuit.record('failed');
    circuit.record('answered');
    expect(circuit.record('failed')).toBe(false);
    expect(circuit.state).toBe('up');
    expect(circuit.record('failed')).toBe(true);
  });

  it('comes back only through a probe that answered, with a fresh count', () => {
    const circuit = new UpstreamCircuit(2);
    circuit.record('failed');
    circuit.record('failed');
    expect(circuit.probeAnswered()).toBe(true);
    expect(circuit.state).toBe('up');
    expect(circuit.probeAnswered()).toBe(false);
    expect(circuit.record('failed')).toBe(false);
    expect(circuit.record('failed')).toBe(true);
  });

  it('takes a peer verdict as it is', () => {
    const circuit = new UpstreamCircuit(3);
    circuit.record('failed');
    expect(circuit.force('out')).toBe(true);
    expect(circuit.force('out')).toBe(false);
    expect(circuit.force('up')).toBe(true);
    // The failure before the peer's verdict is forgotten.
    expect(circuit.record('failed')).toBe(false);
    expect(circuit.record('failed')).toBe(false);
    expect(circuit.record('failed')).toBe(true);
  });

  it('opens at the first failure with a threshold of 1', () => {
    const circuit = new UpstreamCircuit(1);
    expect(circuit.record('failed')).toBe(true);
  });
});
