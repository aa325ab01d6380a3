import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** Row types of every table; JSON columns hold serialized text. Timestamps are unix milliseconds. */
export interface ApiKeysTable {
  id: string;
  owner: string;
  name: string | null;
  prefix: string;
  key_hash: string;
  scopes: string;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
}

export interface IdempotencyKeysTable {
  owner: string;
  key: string;
  request_hash: string;
  state: 'in_progress' | 'complete';
  launch_id: string | null;
  response_status: number | null;
  created_at: number;
  expires_at: number;
}

/** `awaiting_signatures`: a creator-signed launch waiting for the creator's signatures (docs/signing.md). */
export type LaunchStatus = 'awaiting_signatures' | 'queued' | 'processing' | 'complete' | 'failed';

export interface LaunchesTable {
  id: string;
  owner: string;
  status: LaunchStatus;
  request: string;
  webhook_url: string;
  webhook_secret_enc: string;
  results: Generated<string>;
  error: string | null;
  request_id: string | null;
  next_sequence: Generated<number>;
  run_after: Generated<number>;
  lease_owner: string | null;
  lease_expires_at: number | null;
  /** Fencing token: bumped by every claim; writes under a lease name the token they hold. */
  lease_token: Generated<number>;
  run_count: Generated<number>;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  completed_at: number | null;
  /** The funding wallet that pays the launch; null: the service's payer (launches from before funding). */
  payer: string | null;
  /** The W3C traceparent of the request that created it (migration 043); null while tracing is off. */
  trace_parent: Generated<string | null>;
}

export type StepStatus = 'pending' | 'running' | 'waiting' | 'complete' | 'failed' | 'skipped';

export interface LaunchStepsTable {
  launch_id: string;
  name: string;
  position: number;
  status: StepStatus;
  attempts: Generated<number>;
  result: string | null;
  error: string | null;
  pending_tx: string | null;
  transactions: Generated<string>;
  started_at: number | null;
  completed_at: number | null;
  /** When the step's current wait on a transient chain fault began (null: not waiting). */
  waiting_since: number | null;
  /** When a waiting step is tried again. */
  next_attempt_at: number | null;
}

export interface OutboxEventsTable {
  id: string;
  /** The launch, or `own_<owner>` for an owner's own events (webhooks/outbox.ts ownerStreamKey). */
  launch_id: string;
  sequence: number;
  event: string;
  body: string;
  request_id: string | null;
  created_at: number;
  /** The W3C traceparent of the span that recorded it (migration 043): webhook attempts are its children; null while tracing is off. */
  trace_parent: Generated<string | null>;
}

/** `paused`: its endpoint is disabled (resumes when re-enabled); `canceled`: its endpoint was deleted. */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'paused' | 'canceled';

export interface DeliveriesTable {
  id: string;
  event_id: string;
  launch_id: string;
  url: string;
  host: string;
  /** The breaker key: scheme, host, port and path of `url` (webhooks/endpointKey.ts). */
  endpoint: string;
  status: DeliveryStatus;
  attempt_count: Generated<number>;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  /** Fencing token: bumped by every claim; settles name the token they hold. */
  lease_token: Generated<number>;
  last_error: string | null;
  last_status_code: number | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
  /** The owner's webhook endpoint this delivery goes to; null for the launch's own webhookUrl. */
  endpoint_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The owner whose share of delivery slots this delivery takes (the launch's owner; an owner's own events' owner). */
  owner: ColumnType<string, string | undefined, string>;
}

export interface WebhookEndpointsTable {
  id: string;
  owner: string;
  url: string;
  description: string | null;
  /** JSON array of event kinds and `prefix.*` patterns; `["*"]` is every event. */
  events: string;
  signature_scheme: 'service' | 'standard';
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: number | null;
  disabled_at: number | null;
  disabled_reason: string | null;
  /** Start of the current run of failed attempts; null after a success. */
  failing_since: number | null;
  /** At most this many deliveries a second (null: no throttle); migration 040. */
  rate_limit_per_second: ColumnType<number | null, number | null | undefined, number | null>;
  /** The lease-clock time (ms) of the endpoint's next send slot while throttled. */
  rate_next_at: ColumnType<number | null, number | null | undefined, number | null>;
  /** `launch`: each launch's events one at a time, in sequence order; null: none (migration 041). */
  ordering: ColumnType<'launch' | null, 'launch' | null | undefined, 'launch' | null>;
  created_at: number;
  updated_at: number;
}

export interface DeliveryAttemptsTable {
  id: string;
  delivery_id: string;
  attempt: number;
  started_at: number;
  duration_ms: number;
  status_code: number | null;
  outcome: 'success' | 'failure';
  error_class: string | null;
  error_message: string | null;
  response_body: string | null;
}

export interface DeadLettersTable {
  id: string;
  kind: 'launch' | 'delivery' | 'watch';
  owner: string;
  launch_id: string;
  delivery_id: string | null;
  event_id: string | null;
  step: string | null;
  error_code: string;
  error_message: string;
  status: 'open' | 'retried' | 'resolved';
  retry_count: Generated<number>;
  created_at: number;
  updated_at: number;
  resolved_at: number | null;
}

export interface EndpointBreakersTable {
  /** webhooks/endpointKey.ts */
  endpoint: string;
  host: string;
  state: 'closed' | 'open' | 'half-open';
  failures: number;
  opened_at: number | null;
  updated_at: number;
  /** Bumped by every state change: changes are compare-and-set across instances (migration 013). */
  version: Generated<number>;
  /** The instance holding the half-open trial lease, and until when (ms). */
  trial_owner: string | null;
  trial_until: number | null;
}

/** API requests per subject (`key:<id>` or `ip:<addr>`) in one fixed window, shared by every instance. */
export interface RateLimitWindowsTable {
  subject: string;
  window_start: number;
  count: number;
}

export interface ChainAccountsTable {
  address: string;
  lamports: string;
  owner: string;
  executable: number;
  rent_epoch: string;
  data: string;
  updated_at: number;
}

export interface ServiceMetaTable {
  key: string;
  value: string;
}

export interface DashboardSessionsTable {
  id_hash: string;
  key_id: string;
  csrf_token: string;
  created_at: number;
  expires_at: number;
}

/** One owner's funding wallet and limits (docs/funding.md). Amounts in lamports. */
/** An admin's overrides of one owner's bounds; null: the default (migration 028). */
export interface OwnerBoundsTable {
  owner: string;
  max_endpoints: number | null;
  max_launches_in_flight: number | null;
  max_redeliveries: number | null;
  updated_at: number;
}

export interface FundingWalletsTable {
  owner: string;
  address: string;
  /** The keypair's 32-byte seed, base64, sealed under SECRET_KEY. */
  seed_enc: string;
  max_lamports_per_launch: WalletLamportsColumn;
  max_lamports_per_day: WalletLamportsColumn;
  max_launches_per_day: number | null;
  low_balance_lamports: WalletLamportsColumn;
  low_balance: Generated<number>;
  seen_balance: WalletLamportsColumn;
  withdrawing_lamports: WalletLamportsColumn;
  withdrawing_until: number | null;
  created_at: number;
  updated_at: number;
}

export type FundingEntryKind = 'reserve' | 'spend' | 'release' | 'withdraw' | 'deposit' | 'fee';

/** Lamports in a bigint column: written exactly (a bigint binds as one), read as a number unless cast to text. */
type LamportsColumn = ColumnType<number, number | bigint, number | bigint>;
type NullableLamportsColumn = ColumnType<number | null, number | bigint | null, number | bigint | null>;
/** A wallet row's lamports: every read of the row casts them to text (funding/wallets.ts `walletColumns`), exact above 2^53. */
type WalletLamportsColumn = ColumnType<string | null, number | bigint | null, number | bigint | null>;

/** An immutable ledger entry; reservations are derived from these, never stored as a balance. */
export interface FundingLedgerTable {
  id: string;
  owner: string;
  launch_id: string | null;
  kind: FundingEntryKind;
  lamports: LamportsColumn;
  signature: string | null;
  idempotency_key: string | null;
  request_hash: string | null;
  details: string | null;
  created_at: number;
  /** A withdrawal's fee, paid besides its `lamports` (migration 042); null for other entries. */
  fee_lamports: NullableLamportsColumn;
}

/** The next sequence number of an owner's own events (key `own_<owner>`, webhooks/outbox.ts). */
export interface EventStreamsTable {
  key: string;
  next_sequence: number;
}

/** A creator-signed launch's signing state (docs/signing.md, migration 047). */
export interface LaunchSigningTable {
  launch_id: string;
  creator: string;
  /** `setup`: the nonce accounts' transaction is offered; `launch`: the launch's transactions are; `signed`: all signed. */
  phase: 'setup' | 'launch' | 'signed';
  /** Seeds the nonce accounts' addresses (created with seed from the creator). */
  nonce_seed: string;
  nonce_count: number;
  /** SIGNING_DEADLINE: unsigned by then, the launch fails `signature_timeout`. */
  deadline_at: number;
  created_at: number;
  updated_at: number;
}

/** A transaction offered to the creator for signing: the exact message bytes (base64) it signs. */
export interface LaunchSigningTxsTable {
  launch_id: string;
  idx: number;
  /** `setup`, a launch step's name, or `close_nonces`. */
  step: string;
  /** The step's transaction label (its pending record's key). */
  label: string;
  message: string;
  /** JSON: the keys still to sign (the creator). */
  signers: string;
  /** JSON: `{pubkey: base58 signature}` of the keys the service derives for the launch. */
  service_signatures: string;
  /** The creator's verified signature (base58), or null. */
  signature: string | null;
  nonce_account: string | null;
  nonce: string | null;
  /** The setup's blockhash validity (nonce transactions have none). */
  last_valid_block_height: number | null;
  created_at: number;
  signed_at: number | null;
}

export interface Database {
  api_keys: ApiKeysTable;
  idempotency_keys: IdempotencyKeysTable;
  launches: LaunchesTable;
  launch_steps: LaunchStepsTable;
  outbox_events: OutboxEventsTable;
  deliveries: DeliveriesTable;
  webhook_endpoints: WebhookEndpointsTable;
  delivery_attempts: DeliveryAttemptsTable;
  dead_letters: DeadLettersTable;
  endpoint_breakers: EndpointBreakersTable;
  rate_limit_windows: RateLimitWindowsTable;
  chain_accounts: ChainAccountsTable;
  service_meta: ServiceMetaTable;
  dashboard_sessions: DashboardSessionsTable;
  funding_wallets: FundingWalletsTable;
  owner_bounds: OwnerBoundsTable;
  funding_ledger: FundingLedgerTable;
  event_streams: EventStreamsTable;
  launch_signing: LaunchSigningTable;
  launch_signing_txs: LaunchSigningTxsTable;
}

export type LaunchRow = Selectable<LaunchesTable>;
export type NewLaunch = Insertable<LaunchesTable>;
export type LaunchUpdate = Updateable<LaunchesTable>;
export type StepRow = Selectable<LaunchStepsTable>;
export type SigningRow = Selectable<LaunchSigningTable>;
export type SigningTxRow = Selectable<LaunchSigningTxsTable>;
export type DeliveryRow = Selectable<DeliveriesTable>;
export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
export type DeadLetterRow = Selectable<DeadLettersTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type FundingWalletRow = Selectable<FundingWalletsTable>;
export type FundingEntryRow = Selectable<FundingLedgerTable>;
