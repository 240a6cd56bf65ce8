import type { ModelPricing } from '@mgw/contracts';
import { budgetPeriodEndMs, budgetPeriodOf } from './budget';
import { maxCostOf, usageCostOf } from './budget-cost';

const pricing: ModelPricing = {
  inputPerMillion: 1_000_000,
  cachedInputPerMillion: 1_000_000,
  outputPerMillion: 4_000_000,
  embeddingPerMillion: 100_000,
  perImage: { '1024x1024': 40_000, '512x512': 20_000 },
  batchFactorPpm: 500_000,
};

describe('maxCostOf', () => {
  it('prices every estimated token of a chat request at the higher of the input and output prices', () => {
    expect(maxCostOf('chat', pricing, 1_000)).toBe(4_000);
    // never less than what the request can really cost, whatever share of it is output
    expect(maxCostOf('chat', pricing, 1_000)).toBeGreaterThanOrEqual(
      usageCostOf('chat', pricing, { promptTokens: 0, completionTokens: 1_000, images: 0 }),
    );
  });

  it('prices an embedding by its tokens and an image at the highest listed price; no pricing costs 0', () => {
    expect(maxCostOf('embedding', pricing, 1_000_000)).toBe(100_000);
    expect(maxCostOf('image', pricing, 0)).toBe(40_000);
    // an image request reserves its n images of its size
    expect(maxCostOf('image', pricing, 0, { count: 3, size: '512x512' })).toBe(60_000);
    expect(maxCostOf('chat', undefined, 1_000)).toBe(0);
  });
});

describe('usageCostOf', () => {
  it("prices a job's recorded usage by its model's kind, a batch line at the batch factor", () => {
    const chat = { promptTokens: 1_000, completionTokens: 500, images: 0 };
    expect(usageCostOf('chat', pricing, chat)).toBe(3_000);
    expect(usageCostOf('chat', pricing, chat, true)).toBe(1_500);
    expect(usageCostOf('embedding', pricing, { promptTokens: 10, completionTokens: 0, images: 0 })).toBe(1);
    expect(usageCostOf('image', pricing, { promptTokens: 0, completionTokens: 0, images: 2 })).toBe(80_000);
    const small = { promptTokens: 0, completionTokens: 0, images: 2, imageSize: '512x512' };
    expect(usageCostOf('image', pricing, small)).toBe(40_000);
  });
});

describe('budget periods', () => {
  it('names the UTC day, the UTC month, or total, and says when the period ends', () => {
    const lastSecond = Date.UTC(2026, 10, 30, 23, 59, 59);
    expect(budgetPeriodOf('day', lastSecond)).toBe('2026-11-30');
    expect(budgetPeriodOf('month', lastSecond)).toBe('2026-11');
    expect(budgetPeriodOf('month', lastSecond + 1000)).toBe('2026-12');
    expect(budgetPeriodOf('total', lastSecond)).toBe('total');
    expect(budgetPeriodEndMs('month', lastSecond)).toBe(Date.UTC(2026, 11, 1));
    expect(budgetPeriodEndMs('day', Date.UTC(2026, 11, 31, 5))).toBe(Date.UTC(2027, 0, 1));
    expect(budgetPeriodEndMs('total', lastSecond)).toBeNull();
  });
  it('answers for the time asked, whichever period it asked for last (a clock that goes back, a test clock)', () => {
    const midnight = Date.UTC(2027, 0, 1);
    expect(budgetPeriodOf('day', midnight)).toBe('2027-01-01');
    expect(budgetPeriodOf('day', midnight - 1)).toBe('2026-12-31');
    expect(budgetPeriodEndMs('day', midnight - 1)).toBe(midnight);
    expect(budgetPeriodOf('month', midnight)).toBe('2027-01');
    expect(budgetPeriodOf('month', midnight - 1)).toBe('2026-12');
    expect(budgetPeriodEndMs('month', midnight)).toBe(Date.UTC(2027, 1, 1));
    expect(budgetPeriodOf('day', midnight + 86_400_000 * 40)).toBe('2027-02-10');
  });
});
