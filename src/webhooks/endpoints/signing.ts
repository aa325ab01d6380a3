import type { SecretBox } from '../../crypto/secretBox.js';
import type { DeliveryContext } from '../dispatch/deliveryContext.js';

/**
 * The secrets one attempt is signed with, newest first: the current one, plus the previous one
 * while a rotation's overlap lasts. Throws when a secret cannot be decrypted.
 */
export function signingSecrets(ctx: DeliveryContext, now: number, box: SecretBox): string[] {
  const secrets = [box.open(ctx.secretSealed)];
  if (ctx.previousSecretSealed !== null && ctx.previousSecretExpiresAt !== null && now < ctx.previousSecretExpiresAt) {
    secrets.push(box.open(ctx.previousSecretSealed));
  }
  return secrets;
}
