import { revocationSuite } from './revocation-suite.js';

revocationSuite('Redis pub/sub', true);
