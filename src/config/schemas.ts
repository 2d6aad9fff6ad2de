import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { packageRoot } from '../lib/paths.js';
import { closest } from './did-you-mean.js';
import { ConfigError, type ConfigProblem, type YamlFile } from './yaml-file.js';

/** The JSON Schemas in `config/`, compiled once per process use. */
export interface ConfigSchemas {
  gateway: ValidateFunction;
  provider: ValidateFunction;
}

export function compileSchemas(): ConfigSchemas {
  // verbose: an error carries its schema, whose property names give an unknown key's did-you-mean.
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, verbose: true });
  const dir = join(packageRoot(), 'config');
  const load = (name: string): object => JSON.parse(readFileSync(join(dir, name), 'utf8')) as object;
  return { gateway: ajv.compile(load('gateway.schema.json')), provider: ajv.compile(load('provider.schema.json')) };
}

/** Validates a parsed file; throws ConfigError naming file, line, path and what was expected. */
export function assertValid(validate: ValidateFunction, file: YamlFile, pathPrefix = ''): void {
  if (validate(file.data)) return;
  const problems: ConfigProblem[] = (validate.errors ?? []).map((e) => toProblem(e, file, pathPrefix));
  throw new ConfigError(problems);
}

function toProblem(e: ErrorObject, file: YamlFile, pathPrefix: string): ConfigProblem {
  let path = pathPrefix + e.instancePath;
  let message = e.message ?? 'is invalid';
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'additionalProperties') {
    const key = String(params.additionalProperty);
    path = `${path}/${key}`;
    const known = (e.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties;
    const near = known ? closest(key, Object.keys(known)) : undefined;
    message = near ? `is not a known setting; did you mean ${path.slice(0, -key.length)}${near}?` : 'is not a known setting';
  } else if (e.keyword === 'enum') {
    message = `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
  } else if (e.keyword === 'pattern' && String(params.pattern).includes('[0-9]{1,12}')) {
    message = 'must be a decimal USD string such as "0.0000025" (at most 12 decimals)';
  } else if (e.keyword === 'required') {
    message = `must have the field "${String(params.missingProperty)}"`;
  }
  const line = e.keyword === 'additionalProperties' ? (file.keyLineOf ?? file.lineOf)(path) : file.lineOf(path);
  return { file: file.file, line, path, message };
}

/**
 * Validates a plugin's settings block (`settings.<plugin>` in gateway.yaml) against
 * the plugin's own schema, reporting problems at their line like any other setting.
 * Returns the block with the schema's defaults applied.
 */
export function validatePluginSettings(
  plugin: string, schema: object, settings: unknown, source: { file: string; lineOf(pointer: string): number | undefined },
): unknown {
  const ajv = new Ajv({ allErrors: true, strict: true, useDefaults: true, allowUnionTypes: true, verbose: true });
  const data = structuredClone(settings ?? {});
  const validate = ajv.compile(schema);
  const prefix = `/settings/${plugin}`;
  assertValid(validate, { file: source.file, data, lineOf: source.lineOf }, prefix);
  return data;
}
