import { revocationSuite } from './revocation-suite.js';

revocationSuite('PostgreSQL LISTEN/NOTIFY (no Redis)', false);
