/** What a key may do: read launches, create them, or everything for every owner (`admin`). */
export const SCOPES = ['launches:read', 'launches:write', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];
