import type { FailedTransactionMetadata } from 'litesvm';

// Names of LiteSVM's fieldless error enums, in their numeric order (the enums are `const` in the
// typings, so their names are not available at runtime).
const TRANSACTION_ERRORS = (
  'AccountInUse AccountLoadedTwice AccountNotFound ProgramAccountNotFound InsufficientFundsForFee InvalidAccountForFee ' +
  'AlreadyProcessed BlockhashNotFound CallChainTooDeep MissingSignatureForFee InvalidAccountIndex SignatureFailure ' +
  'InvalidProgramForExecution SanitizeFailure ClusterMaintenance AccountBorrowOutstanding WouldExceedMaxBlockCostLimit ' +
  'UnsupportedVersion InvalidWritableAccount WouldExceedMaxAccountCostLimit WouldExceedAccountDataBlockLimit ' +
  'TooManyAccountLocks AddressLookupTableNotFound InvalidAddressLookupTableOwner InvalidAddressLookupTableData ' +
  'InvalidAddressLookupTableIndex InvalidRentPayingAccount WouldExceedMaxVoteCostLimit WouldExceedAccountDataTotalLimit ' +
  'MaxLoadedAccountsDataSizeExceeded ResanitizationNeeded InvalidLoadedAccountsDataSizeLimit UnbalancedTransaction ' +
  'ProgramCacheHitMaxLimit CommitCancelled'
).split(' ');
const INSTRUCTION_ERRORS = (
  'GenericError InvalidArgument InvalidInstructionData InvalidAccountData AccountDataTooSmall InsufficientFunds ' +
  'IncorrectProgramId MissingRequiredSignature AccountAlreadyInitialized UninitializedAccount UnbalancedInstruction ' +
  'ModifiedProgramId ExternalAccountLamportSpend ExternalAccountDataModified ReadonlyLamportChange ReadonlyDataModified ' +
  'DuplicateAccountIndex ExecutableModified RentEpochModified NotEnoughAccountKeys AccountDataSizeChanged ' +
  'AccountNotExecutable AccountBorrowFailed AccountBorrowOutstanding DuplicateAccountOutOfSync InvalidError ' +
  'ExecutableDataModified ExecutableLamportChange ExecutableAccountNotRentExempt UnsupportedProgramId CallDepth ' +
  'MissingAccount ReentrancyNotAllowed MaxSeedLengthExceeded InvalidSeeds InvalidRealloc ComputationalBudgetExceeded ' +
  'PrivilegeEscalation ProgramEnvironmentSetupFailure ProgramFailedToComplete ProgramFailedToCompile Immutable ' +
  'IncorrectAuthority AccountNotRentExempt InvalidAccountOwner ArithmeticOverflow UnsupportedSysvar IllegalOwner ' +
  'MaxAccountsDataAllocationsExceeded MaxAccountsExceeded MaxInstructionTraceLengthExceeded ' +
  'BuiltinProgramsMustConsumeComputeUnits BorshIoError'
).split(' ');

type LiteSvmError = ReturnType<FailedTransactionMetadata['err']>;

/** A LiteSVM transaction error in the JSON form Solana nodes use in statuses and `meta.err`. */
export function transactionErrorJson(err: LiteSvmError): unknown {
  if (typeof err === 'number') return TRANSACTION_ERRORS[err] ?? `TransactionError${err}`;
  if ('index' in err && 'err' in err) {
    const inner = err.err();
    if (typeof inner === 'number') return { InstructionError: [err.index, INSTRUCTION_ERRORS[inner] ?? 'GenericError'] };
    if ('code' in inner) return { InstructionError: [err.index, { Custom: inner.code }] };
    return { InstructionError: [err.index, { BorshIoError: String(inner.msg) }] };
  }
  if ('index' in err) return { DuplicateInstruction: err.index };
  if ('accountIndex' in err) return { InsufficientFundsForRent: { account_index: err.accountIndex } };
  return String(err);
}
