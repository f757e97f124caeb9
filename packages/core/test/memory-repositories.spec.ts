import { InMemoryUnitOfWork } from '../src/testing';
import { describeRepositoryContracts } from '../src/testing/contracts';

describeRepositoryContracts('InMemoryUnitOfWork', async () => ({
  uow: new InMemoryUnitOfWork(),
  close: async () => undefined,
}));
