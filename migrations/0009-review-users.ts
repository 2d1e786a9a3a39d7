import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 0009: the review site's people. Each has a name (what the history records), a role (`viewer` reads and
 * exports, `resolver` also acknowledges, assigns, resolves and dismisses, `admin` also manages people) and a
 * personal token, stored only as a salted scrypt hash: the token is printed once by `intent-ledger users add`
 * and cannot be read back. `token_id` is the token's public, random prefix, so signing in looks up one row and
 * computes one hash. A revoked person keeps their row (the history names them) but cannot sign in, and their
 * open sessions stop at their next request.
 */
export class ReviewUsers1000000000009 implements MigrationInterface {
  name = 'ReviewUsers1000000000009';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE review_users (
        name text PRIMARY KEY CONSTRAINT review_users_name_format CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$'),
        role text NOT NULL CONSTRAINT review_users_role_check CHECK (role IN ('viewer', 'resolver', 'admin')),
        token_id text NOT NULL CONSTRAINT review_users_token_id_unique UNIQUE,
        token_salt bytea NOT NULL,
        token_hash bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE review_users');
  }
}
