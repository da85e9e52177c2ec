import { randomBytes } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import type { PriceOverride } from '../pricing';
import { ENTITY, PriceOverrideRow } from './entities';

/** An override as pricing takes it. */
export function toPriceOverride(row: PriceOverrideRow): PriceOverride {
  return {
    id: row.id,
    modelPattern: row.modelPattern,
    provider: row.provider ?? null,
    effectiveFrom: new Date(row.effectiveFrom),
    inputPerMtok: row.inputPerMtok,
    outputPerMtok: row.outputPerMtok,
    cacheReadPerMtok: row.cacheReadPerMtok ?? null,
    cacheWritePerMtok: row.cacheWritePerMtok ?? null,
    currency: 'USD',
  };
}

/** Every override, oldest effective date first, then by id. */
export async function listPriceOverrides(m: DataSource | EntityManager): Promise<PriceOverrideRow[]> {
  return m.getRepository<PriceOverrideRow>(ENTITY.priceOverride).find({ order: { effectiveFrom: 'ASC', id: 'ASC' } });
}

export async function getPriceOverride(m: DataSource | EntityManager, id: string): Promise<PriceOverrideRow | null> {
  return m.getRepository<PriceOverrideRow>(ENTITY.priceOverride).findOneBy({ id });
}

/** Stores a new override under a fresh id (`ovr-` and 8 hex digits); returns its row. */
export async function addPriceOverride(
  m: DataSource | EntityManager,
  input: Omit<PriceOverrideRow, 'id' | 'createdAt'>,
  now = new Date(),
): Promise<PriceOverrideRow> {
  const row: PriceOverrideRow = { ...input, id: `ovr-${randomBytes(4).toString('hex')}`, createdAt: now };
  await m.getRepository<PriceOverrideRow>(ENTITY.priceOverride).insert(row);
  return row;
}

/** How long a worker keeps the overrides it read before reading them again. */
export const OVERRIDES_REFRESH_MS = 5_000;

/**
 * The overrides a worker prices with: read at most every OVERRIDES_REFRESH_MS, so a `prices set`
 * reaches every worker within that time (set an override before its effective date).
 */
export class PriceOverrideCache {
  private list: readonly PriceOverride[] = [];
  private readAt = -Infinity;
  private reading: Promise<readonly PriceOverride[]> | null = null;

  constructor(
    private readonly ds: DataSource,
    private readonly refreshMs = OVERRIDES_REFRESH_MS,
  ) {}

  async current(): Promise<readonly PriceOverride[]> {
    if (performance.now() - this.readAt < this.refreshMs) return this.list;
    this.reading ??= listPriceOverrides(this.ds)
      .then((rows) => {
        this.list = rows.map(toPriceOverride);
        this.readAt = performance.now();
        return this.list;
      })
      .finally(() => {
        this.reading = null;
      });
    return this.reading;
  }
}
