/** The chain layer's public surface: backends, launch keys, the idempotent send and the token steps. */
export type { BlockhashInfo, ChainBackend, ChainProbe, Commitment, FeeSettings, SignatureStatus } from './backend.js';
export { createEmbeddedBackend, type EmbeddedBackend, type EmbeddedBackendOptions } from './embedded/backend.js';
export type { GenesisAccount, GenesisHook } from './embedded/programs.js';
export { createRpcBackend, type RpcBackendOptions } from './rpc/backend.js';
export { loadKeypairFile } from './rpc/payerFile.js';
export { deriveLaunchKeys, type LaunchKeys } from './keys.js';
export { sendIdempotent, type IdempotentSend, type SendResult } from './send.js';
export { requiredPrograms, stepExecutors } from './steps/index.js';
