import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSecretBox, type SecretBox } from '../../src/crypto/secretBox.js';
import { migrateToLatest, openDatabase, type Db } from '../../src/db/database.js';
import { insertLaunch } from '../../src/launches/store.js';
import { newSortableId } from '../../src/lib/ids.js';
import { endpointHost, endpointKey } from '../../src/webhooks/endpointKey.js';
import type { WebhookEnvelope } from '../../src/webhooks/outbox.js';

export const BENCH_SECRET = 'whsec_bench_0123456789abcdef';

/** A fresh migrated SQLite file in its own temp directory. */
export interface BenchDb {
  db: Db;
  path: string;
  dir: string;
  box: SecretBox;
  secretKey: Buffer;
  close(options?: { keep?: boolean }): Promise<void>;
}

/** Opens (and migrates) a database in a new temp directory, or at `path` when given. */
export async function createBenchDb(path?: string): Promise<BenchDb> {
  const dir = path ? '' : mkdtempSync(join(tmpdir(), 'bench-'));
  const file = path ?? join(dir, 'bench.sqlite');
  const opened = openDatabase(file);
  await migrateToLatest(opened.db);
  const secretKey = randomBytes(32);
  return {
    db: opened.db,
    path: file,
    dir,
    secretKey,
    box: createSecretBox(secretKey),
    async close(options = {}) {
      await opened.close();
      if (dir && !options.keep) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Inserts a queued launch whose webhook goes to `url`, its secret sealed like the API does. */
export async function insertBenchLaunch(db: Db, box: SecretBox, url: string, now = Date.now(), owner = 'bench'): Promise<string> {
  const id = newSortableId('lch');
  await insertLaunch(db, {
    id,
    owner,
    request: JSON.stringify({ name: 'Bench Token', ticker: 'BNCH' }),
    webhookUrl: url,
    webhookSecretEnc: box.seal(BENCH_SECRET),
    requestId: 'req_bench',
    steps: [],
    now,
  });
  return id;
}

/**
 * Pre-fills the outbox with `count` committed events of one launch and their pending deliveries,
 * in bulk (setup, not measured). Rows match what `recordEvent` writes; with `endpointId`, the
 * deliveries are that webhook endpoint's (`url` its URL).
 */
export async function prefillOutbox(db: Db, launchId: string, url: string, count: number, now = Date.now(), owner = 'bench', endpointId: string | null = null): Promise<string[]> {
  // Committed one millisecond apart in the recent past, as a burst of events would be: all due now.
  const base = now - count;
  const ids: string[] = [];
  const host = endpointHost(url);
  const endpoint = endpointKey(url);
  const chunk = 500;
  await db.transaction().execute(async (trx) => {
    for (let start = 0; start < count; start += chunk) {
      const events = [];
      const deliveries = [];
      for (let i = start; i < Math.min(count, start + chunk); i++) {
        const envelope: WebhookEnvelope = {
          id: newSortableId('evt'),
          event: 'launch.step_complete',
          timestamp: new Date(base + i).toISOString(),
          launchId,
          sequence: i + 1,
          data: { step: 'create_mint', index: 0, total: 3, transactions: [] },
        };
        ids.push(envelope.id);
        events.push({ id: envelope.id, launch_id: launchId, sequence: i + 1, event: envelope.event, body: JSON.stringify(envelope), request_id: 'req_bench', created_at: base + i });
        deliveries.push({
          id: newSortableId('dlv'),
          event_id: envelope.id,
          launch_id: launchId,
          owner,
          url,
          host,
          endpoint,
          status: 'pending' as const,
          attempt_count: 0,
          next_attempt_at: base + i,
          lease_owner: null,
          lease_expires_at: null,
          last_error: null,
          last_status_code: null,
          created_at: base + i,
          updated_at: base + i,
          completed_at: null,
          endpoint_id: endpointId,
        });
      }
      await trx.insertInto('outbox_events').values(events).execute();
      await trx.insertInto('deliveries').values(deliveries).execute();
    }
    await trx.updateTable('launches').set({ next_sequence: count + 1 }).where('id', '=', launchId).execute();
  });
  return ids;
}
