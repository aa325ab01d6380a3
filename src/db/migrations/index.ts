import type { Migration, MigrationProvider } from 'kysely';
import * as m001 from './001_initial.js';
import * as m003 from './003_chain.js';
import * as m004 from './004_delivery_claim_indexes.js';
import * as m005 from './005_fencing.js';
import * as m006 from './006_drop_unread_columns.js';
import * as m007 from './007_endpoint_breakers.js';
import * as m008 from './008_watcher.js';
import * as m009 from './009_dashboard.js';
import * as m010 from './010_webhook_endpoints.js';
import * as m012 from './012_postgres.js';
import * as m013 from './013_shared_breakers_rate_limits.js';
import * as m017 from './017_watch_woken.js';
import * as m018 from './018_delivery_index_locality.js';
import * as m019 from './019_drop_redundant_delivery_indexes.js';
import * as m031 from './031_retention_indexes.js';
import * as m035 from './035_step_waiting.js';
import * as m020 from './020_funding.js';
import * as m021 from './021_owner_events.js';
import * as m022 from './022_delivery_owner_lanes.js';
import * as m023 from './023_claim_function.js';
import * as m024 from './024_settle_and_claim_function.js';
import * as m025 from './025_claim_generic_plans.js';
import * as m026 from './026_rowid_after_xid.js';
import * as m028 from './028_owner_bounds.js';
import * as m040 from './040_endpoint_throttle.js';
import * as m041 from './041_endpoint_ordering.js';
import * as m042 from './042_ledger_signatures.js';
import * as m043 from './043_trace_context.js';
import * as m044 from './044_curve_migrations.js';
import * as m045 from './045_claim_slot_spacing.js';
import * as m046 from './046_fee_claims.js';
import * as m047 from './047_creator_signing.js';
import * as m048 from './048_delivery_leases.js';
import * as m049 from './049_open_reservations.js';
import * as m050 from './050_fee_auto_claims.js';
import * as m051 from './051_claim_per_host.js';
import * as m052 from './052_reserve_trigger_by_launch.js';
import * as m053 from './053_claim_prefetch.js';
import * as m054 from './054_settle_set_based.js';
import * as m055 from './055_pending_lane_partial.js';
import * as m056 from './056_claim_narrow_result.js';
import * as m057 from './057_deliveries_fillfactor.js';
import * as m058 from './058_settle_rowid.js';

/** Every migration, by name; names sort in the order they run. */
export const migrations: Record<string, Migration> = {
  '001_initial': m001,
  '003_chain': m003,
  '004_delivery_claim_indexes': m004,
  '005_fencing': m005,
  '006_drop_unread_columns': m006,
  '007_endpoint_breakers': m007,
  '008_watcher': m008,
  '009_dashboard': m009,
  '010_webhook_endpoints': m010,
  '012_postgres': m012,
  '013_shared_breakers_rate_limits': m013,
  '017_watch_woken': m017,
  '018_delivery_index_locality': m018,
  '019_drop_redundant_delivery_indexes': m019,
  '031_retention_indexes': m031,
  '035_step_waiting': m035,
  '020_funding': m020,
  '021_owner_events': m021,
  '022_delivery_owner_lanes': m022,
  '023_claim_function': m023,
  '024_settle_and_claim_function': m024,
  '025_claim_generic_plans': m025,
  '026_rowid_after_xid': m026,
  '028_owner_bounds': m028,
  '040_endpoint_throttle': m040,
  '041_endpoint_ordering': m041,
  '042_ledger_signatures': m042,
  '043_trace_context': m043,
  '044_curve_migrations': m044,
  '045_claim_slot_spacing': m045,
  '046_fee_claims': m046,
  '047_creator_signing': m047,
  '048_delivery_leases': m048,
  '049_open_reservations': m049,
  '050_fee_auto_claims': m050,
  '051_claim_per_host': m051,
  '052_reserve_trigger_by_launch': m052,
  '053_claim_prefetch': m053,
  '054_settle_set_based': m054,
  '055_pending_lane_partial': m055,
  '056_claim_narrow_result': m056,
  '057_deliveries_fillfactor': m057,
  '058_settle_rowid': m058,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
