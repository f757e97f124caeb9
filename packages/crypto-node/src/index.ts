export { ScryptPasswordHasher, type ScryptCost } from './password-hasher';
export { RandomTokenGenerator } from './tokens';
export { AesGcmSecretBox, SECRET_BOX_KDF_INFO, SECRET_BOX_KDF_SALT } from './secret-box';
export { CryptoRandomSource, RandomIdGenerator, SystemClock, SystemTimer, generateSecretKey } from './system';
export { HmacWebhookSigner } from './webhook-signer';
export { INSTALLATION_ID_MESSAGE, installationId } from './installation';
