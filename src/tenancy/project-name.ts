/**
 * The project name rule (docs/management.md, "Project names"; issue 35): a slug — lowercase
 * letters, digits, `-` and `_`, starting with a letter or digit, at most 64 characters —
 * because people type it in commands (`--project web-app`) and scripts, like `default`.
 * Checked when a project is created, by the management API and the CLI alike.
 */
const PROJECT_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** Why `name` is not a project name (with the slug it could be), or undefined when it is one. */
export function projectNameProblem(name: string): string | undefined {
  if (PROJECT_NAME.test(name)) return undefined;
  const slug = name.toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/^[-_]+|-+$/g, '').slice(0, 64);
  const suggestion = slug && PROJECT_NAME.test(slug) ? `, e.g. "${slug}"` : ', e.g. "web-app"';
  return `A project name is a slug: lowercase letters, digits, "-" and "_", starting with a letter or digit, at most 64 characters${suggestion}`;
}
