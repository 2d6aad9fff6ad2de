/**
 * One step of the database schema. Versions start at 1 and go up by one; a database
 * records the versions it has applied in `schema_migrations`, and opening a store
 * applies the missing ones in order, each in the transaction that records it.
 *
 * To change the schema, append a migration to MIGRATIONS (a file `00N-what.ts` beside
 * this one, importing this type from `./migration.js`, not the list's `./index.js`): never
 * edit an applied migration, and never a CREATE TABLE of an earlier one.
 */
export interface Migration {
  readonly version: number;
  /** What it changes, one line, kept in schema_migrations. */
  readonly name: string;
  /** One SQL text for both drivers, or each driver's own where the SQL really differs. */
  readonly sql: string | { readonly sqlite: string; readonly postgres: string };
}
