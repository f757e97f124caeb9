export { GitServer, type GitServerOptions } from './git-server';
export { SourceBuilder, type GitLogger, type GitUseCases, type Push } from './builder';
export { parseGitCommand, type GitRequest, type GitService } from './command';
export { fingerprintOf, generateEd25519Pair, loadOrCreateHostKey, type Ed25519Pair, type HostKey } from './keys';
export { DEFAULT_BRANCH, DEPLOY_BRANCHES, RepositoryStore, type RepositoryOwner } from './repositories';
