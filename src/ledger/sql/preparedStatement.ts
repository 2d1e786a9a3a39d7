import type { QueryConfig } from 'pg';

/**
 * A named (prepared) statement, as a function from one call's values to the config pg is given.
 *
 * Why not a plain `{ name, text, values }` literal: pg copies every config it receives property by property
 * (`Object.getOwnPropertyDescriptors` + `Object.defineProperties`, a visible share of a run()'s client CPU:
 * docs/PERFORMANCE.md, "The ledger's hot path"), but keeps the copy's prototype. So name and text live on
 * one shared prototype and each call's config owns only its values.
 */
export function preparedStatement(name: string, text: string): (values: unknown[]) => QueryConfig {
  const statement: QueryConfig = { name, text };
  return (values) => {
    const config: QueryConfig = Object.create(statement);
    config.values = values;
    return config;
  };
}
