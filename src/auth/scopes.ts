/**
 * What a key may do: read launches, create them, everything for every owner (`admin`), and move its
 * owner's funds out of the funding wallet (`funds:withdraw`: never granted by default, and not part
 * of `admin`, so a leaked admin key cannot empty a wallet).
 */
export const SCOPES = ['launches:read', 'launches:write', 'admin', 'funds:withdraw'] as const;
export type Scope = (typeof SCOPES)[number];

/** Scopes `admin` does not imply: they must be granted by name. */
export const EXPLICIT_SCOPES: readonly Scope[] = ['funds:withdraw'];
