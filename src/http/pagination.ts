import { invalidRequest } from './errors.js';

export interface Page {
  limit: number;
  offset: number;
}

/** Reads `limit` (1..max, default) and `offset` (>= 0) query parameters; 400 names the bad one. */
export function readPage(query: (name: string) => string | undefined, options: { defaultLimit: number; maxLimit: number }): Page {
  const rawLimit = query('limit');
  const rawOffset = query('offset');
  const errors: Array<{ field: string; message: string }> = [];
  let limit = options.defaultLimit;
  let offset = 0;
  if (rawLimit !== undefined) {
    if (!/^\d{1,6}$/.test(rawLimit) || Number(rawLimit) < 1 || Number(rawLimit) > options.maxLimit) {
      errors.push({ field: 'limit', message: `must be an integer from 1 to ${options.maxLimit}` });
    } else limit = Number(rawLimit);
  }
  if (rawOffset !== undefined) {
    if (!/^\d{1,9}$/.test(rawOffset)) errors.push({ field: 'offset', message: 'must be an integer >= 0' });
    else offset = Number(rawOffset);
  }
  if (errors.length > 0) throw invalidRequest('Invalid pagination parameters', { fields: errors });
  return { limit, offset };
}

/** The pagination block of docs/api.md. */
export function paginationBlock(page: Page, returned: number, total: number): Record<string, unknown> {
  const hasMore = page.offset + returned < total;
  return { limit: page.limit, offset: page.offset, returned, total, has_more: hasMore, next_offset: hasMore ? page.offset + returned : null };
}
