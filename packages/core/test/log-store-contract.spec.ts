import { InMemoryLogStore, describeLogStoreContract } from '@svc/core/testing';

describeLogStoreContract('InMemoryLogStore', async () => ({ store: new InMemoryLogStore(), close: async () => undefined }));
