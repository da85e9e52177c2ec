import { InitialSchema1795219200000 } from './1795219200000-initial-schema';

/** Every migration, oldest first. A new migration is appended here, never edited in place. */
export const MIGRATIONS = [InitialSchema1795219200000];
