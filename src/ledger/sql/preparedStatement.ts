import type { QueryConfig } from 'pg';

/**
 * A named (prepared) statement, as a function from one call's values to the config pg is given.
 *
 * Why not a plain `{ name, text, values }` literal: pg copies every config it receives property by property
 * (`Object.getOwnPropertyDescriptors` + `Object.defineProperties`, a visible share of a run()'s client CPU:
 * docs/PERFORMANCE.md, "The ledger's hot path"), but keeps the copy's prototype. So name and text live on
 * one shared prototype and each call's config owns only its values. `rowMode: 'array'` has pg hand each row
 * over as an array of its columns instead of building an object keyed by column name.
 */
export function preparedStatement(
  name: string,
  text: string,
  rowMode?: 'array',
): (values: unknown[]) => QueryConfig {
  // pg's QueryConfig type leaves out rowMode, which pg reads from the same object (QueryArrayConfig).
  const statement = (rowMode === undefined ? { name, text } : { name, text, rowMode }) as QueryConfig;
  return (values) => {
    const config: QueryConfig = Object.create(statement);
    config.values = values;
    return config;
  };
}
