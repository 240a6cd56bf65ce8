import { costOf, decimalOf, imagePriceOf, microsOf, type ModelPricing } from './model-pricing';

const pricing: ModelPricing = {
  inputPerMillion: 2_500_000, // 2.5 per million
  cachedInputPerMillion: 1_250_000,
  outputPerMillion: 10_000_000,
  embeddingPerMillion: 20_000,
  perImage: { '1024x1024': 40_000, '1792x1024': 80_000 },
  batchFactorPpm: 500_000,
};

describe('costOf', () => {
  it('prices input, cached input and output tokens per million, in micro-units', () => {
    // 1000 × 2.5/M + 0 + 500 × 10/M = 0.0025 + 0.005 = 0.0075 → 7500 micro-units
    expect(costOf({ inputTokens: 1000, outputTokens: 500 }, pricing)).toBe(7500);
    // 400 cached of 1000: 600 × 2.5 + 400 × 1.25 = 2000 (µ) + 5000 (µ) for the output
    expect(costOf({ inputTokens: 1000, cachedInputTokens: 400, outputTokens: 500 }, pricing)).toBe(7000);
  });

  it('never counts more cached tokens than input tokens', () => {
    // all 10 input tokens cached at 1.25 per million: 12.5 micro-units, rounded up
    expect(costOf({ inputTokens: 10, cachedInputTokens: 50 }, pricing)).toBe(13);
  });

  it('rounds up once per request, so a sum of costs is a sum of integers', () => {
    // 3 tokens at 2.5/M = 7.5 micro-units → 8
    expect(costOf({ inputTokens: 3 }, pricing)).toBe(8);
    let sum = 0;
    for (let i = 0; i < 10_000; i++) sum += costOf({ inputTokens: 3 }, pricing);
    expect(sum).toBe(80_000);
  });

  it('prices embedding tokens and images by size, the highest listed price for a size not listed', () => {
    expect(costOf({ embeddingTokens: 1_000_000 }, pricing)).toBe(20_000);
    const images = [
      { size: '1024x1024', count: 2 },
      { size: '512x512', count: 1 },
    ];
    expect(costOf({ images }, pricing)).toBe(2 * 40_000 + 80_000);
    expect(imagePriceOf(pricing, '256x256')).toBe(80_000);
  });

  it('applies the batch factor to a batch line only', () => {
    const usage = { inputTokens: 1_000_000, outputTokens: 1_000_000 };
    expect(costOf(usage, pricing)).toBe(12_500_000);
    expect(costOf(usage, pricing, true)).toBe(6_250_000);
  });

  it('costs 0 without pricing', () => {
    expect(costOf({ inputTokens: 1_000_000, outputTokens: 5 }, undefined)).toBe(0);
  });

  it('stays exact where floats drift', () => {
    // 0.1 + 0.2 per million over a million tokens each: 300 000 micro-units, not 300 000.00000000006
    const tenths: ModelPricing = { ...pricing, inputPerMillion: 100_000, outputPerMillion: 200_000 };
    expect(costOf({ inputTokens: 1_000_000, outputTokens: 1_000_000 }, tenths)).toBe(300_000);
    expect(
      costOf({ inputTokens: 100_000_000, outputTokens: 100_000_000 }, { ...tenths, outputPerMillion: 1e12 }),
    ).toBe(100 * 1e12 + 10_000_000);
  });
});

describe('microsOf', () => {
  it('reads a decimal price into micro-units, or says why not', () => {
    expect(microsOf(2.5, 1e6)).toBe(2_500_000);
    expect(microsOf(0.000001, 1e6)).toBe(1);
    expect(microsOf(0, 1e6)).toBe(0);
    expect(microsOf(-1, 1e6)).toBe('must not be negative');
    expect(microsOf('2.5', 1e6)).toBe('must be a number');
    expect(microsOf(Number.NaN, 1e6)).toBe('must be a number');
    expect(microsOf(0.0000001, 1e6)).toBe('must have at most six decimals');
    expect(microsOf(2, 1)).toBe('must be at most 1');
  });
});

describe('decimalOf', () => {
  it('writes micro-units as a decimal of the currency', () => {
    expect(decimalOf(12_500_000)).toBe('12.5');
    expect(decimalOf(7)).toBe('0.000007');
    expect(decimalOf(3_000_000)).toBe('3');
    expect(decimalOf(-1_500_000)).toBe('-1.5');
  });
});
