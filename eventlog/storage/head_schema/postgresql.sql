-- revision: 0032_compact_puts
CREATE FUNCTION eventlog_head_schema.eventlog_notify() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    channel text := CASE WHEN octet_length(TG_TABLE_SCHEMA) <= 54
                         THEN 'eventlog.' || TG_TABLE_SCHEMA
                         ELSE 'eventlog.' || md5(TG_TABLE_SCHEMA) END;
BEGIN
    -- Listeners hold this lock shared while they listen: taken, nobody listens.
    IF pg_try_advisory_lock(hashtext('eventlog.listening'), hashtext(channel)) THEN
        PERFORM pg_advisory_unlock(hashtext('eventlog.listening'), hashtext(channel));
    ELSE
        PERFORM pg_notify(channel, '');
    END IF;
    RETURN NULL;
END $$;

CREATE TABLE eventlog_head_schema.alembic_version (
    version_num character varying(32) NOT NULL
);

CREATE TABLE eventlog_head_schema.blobs (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    digest bytea NOT NULL,
    size bigint NOT NULL,
    refs bigint NOT NULL,
    data bytea NOT NULL
)
WITH (toast_tuple_target='128');

CREATE TABLE eventlog_head_schema.checkpoint_runs (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    session_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    run_id uuid NOT NULL,
    first_version bigint NOT NULL,
    first_position bigint NOT NULL,
    first_checkpoint_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    first_parent_id character varying(255) COLLATE pg_catalog."C",
    first_step bigint NOT NULL,
    started_at timestamp with time zone NOT NULL
);

CREATE TABLE eventlog_head_schema.checkpoint_sessions (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    session_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    latest_version bigint NOT NULL,
    latest_position bigint NOT NULL,
    latest_checkpoint_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    latest_run_id uuid NOT NULL,
    latest_step bigint NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    latest_parent_id character varying(255) COLLATE pg_catalog."C",
    latest_metadata text DEFAULT '{}'::text NOT NULL COLLATE pg_catalog."C"
)
WITH (fillfactor='70');

CREATE TABLE eventlog_head_schema.checkpoints (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    session_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    version bigint NOT NULL,
    "position" bigint NOT NULL,
    run_id uuid NOT NULL,
    checkpoint_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    parent_id character varying(255) COLLATE pg_catalog."C",
    step bigint NOT NULL,
    state_digest bytea NOT NULL,
    state_encoding character varying(16) NOT NULL COLLATE pg_catalog."C",
    state_size bigint NOT NULL,
    metadata text NOT NULL COLLATE pg_catalog."C",
    recorded_at timestamp with time zone NOT NULL,
    subject character varying(255) COLLATE pg_catalog."C"
);

CREATE TABLE eventlog_head_schema.consumers (
    name character varying(255) NOT NULL COLLATE pg_catalog."C",
    scope_tenant character varying(255) COLLATE pg_catalog."C",
    types text COLLATE pg_catalog."C",
    cursor character varying(255) COLLATE pg_catalog."C",
    token bigint NOT NULL,
    holder character varying(255) COLLATE pg_catalog."C",
    lease_until timestamp with time zone,
    updated_at timestamp with time zone NOT NULL,
    signature bytea
);

CREATE TABLE eventlog_head_schema.events (
    "position" bigint NOT NULL,
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    stream_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    stream_version bigint NOT NULL,
    event_id uuid NOT NULL,
    type character varying(255) NOT NULL COLLATE pg_catalog."C",
    data bytea NOT NULL,
    recorded_at timestamp with time zone NOT NULL,
    prev_hash bytea NOT NULL,
    hash bytea NOT NULL,
    tx_id xid8 DEFAULT pg_current_xact_id() NOT NULL,
    actor character varying(255) COLLATE pg_catalog."C",
    signature bytea
)
WITH (toast_tuple_target='8160');

ALTER TABLE eventlog_head_schema.events ALTER COLUMN "position" ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME eventlog_head_schema.events_position_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE eventlog_head_schema.interrupt_batches (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    batch_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    thread_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    checkpoint_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    operation_name character varying(255) NOT NULL COLLATE pg_catalog."C",
    operation_version character varying(255) NOT NULL COLLATE pg_catalog."C",
    state character varying(32) NOT NULL COLLATE pg_catalog."C",
    version bigint NOT NULL,
    generation bigint NOT NULL,
    token_digest character varying(64) COLLATE pg_catalog."C",
    lease_expires_at timestamp with time zone,
    approval_expires_at timestamp with time zone NOT NULL,
    effect_started boolean NOT NULL,
    effect_generation bigint,
    capture_id character varying(64) COLLATE pg_catalog."C",
    capture_generation bigint,
    capture_state character varying(32) COLLATE pg_catalog."C",
    resolution character varying(32) COLLATE pg_catalog."C",
    reconciled_by character varying(255) COLLATE pg_catalog."C",
    descriptor bytea NOT NULL,
    created_position bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_position bigint NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE TABLE eventlog_head_schema.keyrings (
    kek_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    check_value bytea NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE eventlog_head_schema.stream_heads (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    stream_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    version bigint NOT NULL,
    head_hash bytea NOT NULL,
    last_position bigint NOT NULL,
    updated_at timestamp with time zone NOT NULL
)
WITH (fillfactor='70');

CREATE TABLE eventlog_head_schema.subject_keys (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    subject character varying(255) NOT NULL COLLATE pg_catalog."C",
    generation integer NOT NULL,
    kek_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    wrapped bytea,
    created_at timestamp with time zone NOT NULL,
    erased_at timestamp with time zone
);

CREATE TABLE eventlog_head_schema.thread_channel_values (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    thread_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    namespace text NOT NULL COLLATE pg_catalog."C",
    channel text NOT NULL COLLATE pg_catalog."C",
    channel_version text NOT NULL COLLATE pg_catalog."C",
    encoding character varying(255) NOT NULL COLLATE pg_catalog."C",
    digest bytea NOT NULL
);

CREATE TABLE eventlog_head_schema.thread_checkpoints (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    thread_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    namespace text NOT NULL COLLATE pg_catalog."C",
    checkpoint_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    version bigint NOT NULL,
    "position" bigint NOT NULL,
    parent_id character varying(255) COLLATE pg_catalog."C",
    run_key text COLLATE pg_catalog."C",
    step bigint,
    state_encoding character varying(255) NOT NULL COLLATE pg_catalog."C",
    state_digest bytea NOT NULL,
    channels text NOT NULL COLLATE pg_catalog."C",
    metadata text NOT NULL COLLATE pg_catalog."C",
    recorded_at timestamp with time zone NOT NULL,
    subject character varying(255) COLLATE pg_catalog."C"
);

CREATE TABLE eventlog_head_schema.thread_writes (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    thread_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    namespace text NOT NULL COLLATE pg_catalog."C",
    checkpoint_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    task_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    idx bigint NOT NULL,
    channel text NOT NULL COLLATE pg_catalog."C",
    encoding character varying(255) NOT NULL COLLATE pg_catalog."C",
    digest bytea NOT NULL,
    task_path text NOT NULL COLLATE pg_catalog."C",
    version bigint NOT NULL
);

CREATE TABLE eventlog_head_schema.tree_leaves (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    event_id uuid NOT NULL,
    leaf_index bigint NOT NULL
);

CREATE TABLE eventlog_head_schema.tree_nodes (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    level smallint NOT NULL,
    idx bigint NOT NULL,
    hash bytea NOT NULL
);

CREATE TABLE eventlog_head_schema.tree_states (
    tenant_id character varying(255) NOT NULL COLLATE pg_catalog."C",
    size bigint NOT NULL,
    cursor character varying(255) COLLATE pg_catalog."C"
);

INSERT INTO eventlog_head_schema.alembic_version VALUES ('0032_compact_puts');

ALTER TABLE ONLY eventlog_head_schema.alembic_version
    ADD CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num);

ALTER TABLE ONLY eventlog_head_schema.blobs
    ADD CONSTRAINT blobs_pkey PRIMARY KEY (tenant_id, digest);

ALTER TABLE ONLY eventlog_head_schema.checkpoint_runs
    ADD CONSTRAINT checkpoint_runs_pkey PRIMARY KEY (tenant_id, session_id, run_id);

ALTER TABLE ONLY eventlog_head_schema.checkpoint_sessions
    ADD CONSTRAINT checkpoint_sessions_pkey PRIMARY KEY (tenant_id, session_id);

ALTER TABLE ONLY eventlog_head_schema.checkpoints
    ADD CONSTRAINT checkpoints_pkey PRIMARY KEY (tenant_id, session_id, version);

ALTER TABLE ONLY eventlog_head_schema.consumers
    ADD CONSTRAINT consumers_pkey PRIMARY KEY (name);

ALTER TABLE ONLY eventlog_head_schema.events
    ADD CONSTRAINT events_event_id_key UNIQUE (tenant_id, event_id);

ALTER TABLE ONLY eventlog_head_schema.events
    ADD CONSTRAINT events_pkey PRIMARY KEY ("position");

ALTER TABLE ONLY eventlog_head_schema.events
    ADD CONSTRAINT events_stream_version_key UNIQUE (tenant_id, stream_id, stream_version);

ALTER TABLE ONLY eventlog_head_schema.interrupt_batches
    ADD CONSTRAINT interrupt_batches_pkey PRIMARY KEY (tenant_id, batch_id);

ALTER TABLE ONLY eventlog_head_schema.keyrings
    ADD CONSTRAINT keyrings_pkey PRIMARY KEY (kek_id);

ALTER TABLE ONLY eventlog_head_schema.stream_heads
    ADD CONSTRAINT stream_heads_pkey PRIMARY KEY (tenant_id, stream_id);

ALTER TABLE ONLY eventlog_head_schema.subject_keys
    ADD CONSTRAINT subject_keys_pkey PRIMARY KEY (tenant_id, subject, generation);

ALTER TABLE ONLY eventlog_head_schema.thread_channel_values
    ADD CONSTRAINT thread_channel_values_pkey PRIMARY KEY (tenant_id, thread_id, namespace, channel_version, channel);

ALTER TABLE ONLY eventlog_head_schema.thread_checkpoints
    ADD CONSTRAINT thread_checkpoints_pkey PRIMARY KEY (tenant_id, thread_id, namespace, checkpoint_id);

ALTER TABLE ONLY eventlog_head_schema.thread_writes
    ADD CONSTRAINT thread_writes_pkey PRIMARY KEY (tenant_id, thread_id, namespace, checkpoint_id, task_id, idx);

ALTER TABLE ONLY eventlog_head_schema.tree_leaves
    ADD CONSTRAINT tree_leaves_pkey PRIMARY KEY (tenant_id, event_id);

ALTER TABLE ONLY eventlog_head_schema.tree_nodes
    ADD CONSTRAINT tree_nodes_pkey PRIMARY KEY (tenant_id, level, idx);

ALTER TABLE ONLY eventlog_head_schema.tree_states
    ADD CONSTRAINT tree_states_pkey PRIMARY KEY (tenant_id);

CREATE INDEX checkpoints_by_checkpoint_id ON eventlog_head_schema.checkpoints USING btree (tenant_id, session_id, checkpoint_id, version);

CREATE INDEX checkpoints_by_parent ON eventlog_head_schema.checkpoints USING btree (tenant_id, session_id, parent_id, version);

CREATE INDEX checkpoints_by_run ON eventlog_head_schema.checkpoints USING btree (tenant_id, run_id, "position");

CREATE INDEX checkpoints_by_subject ON eventlog_head_schema.checkpoints USING btree (tenant_id, subject) WHERE (subject IS NOT NULL);

CREATE INDEX events_log_order ON eventlog_head_schema.events USING btree (tx_id, "position");

CREATE INDEX events_tenant_log_order ON eventlog_head_schema.events USING btree (tenant_id, tx_id, "position");

CREATE INDEX interrupt_batches_approval ON eventlog_head_schema.interrupt_batches USING btree (state, approval_expires_at);

CREATE INDEX interrupt_batches_capture ON eventlog_head_schema.interrupt_batches USING btree (capture_state, updated_at);

CREATE INDEX interrupt_batches_lease ON eventlog_head_schema.interrupt_batches USING btree (state, lease_expires_at);

CREATE INDEX interrupt_batches_list ON eventlog_head_schema.interrupt_batches USING btree (tenant_id, created_position);

CREATE INDEX interrupt_batches_state ON eventlog_head_schema.interrupt_batches USING btree (tenant_id, state, created_position);

CREATE INDEX interrupt_batches_thread ON eventlog_head_schema.interrupt_batches USING btree (tenant_id, thread_id, created_position);

CREATE INDEX interrupt_batches_updated ON eventlog_head_schema.interrupt_batches USING btree (state, updated_at);

CREATE INDEX thread_checkpoints_by_run ON eventlog_head_schema.thread_checkpoints USING btree (run_key, tenant_id) WHERE (run_key IS NOT NULL);

CREATE INDEX thread_checkpoints_by_subject ON eventlog_head_schema.thread_checkpoints USING btree (tenant_id, subject) WHERE (subject IS NOT NULL);

CREATE INDEX thread_checkpoints_by_thread ON eventlog_head_schema.thread_checkpoints USING btree (tenant_id, thread_id, checkpoint_id) WHERE (length(namespace) > 0);

CREATE TRIGGER events_notify AFTER INSERT ON eventlog_head_schema.events FOR EACH STATEMENT EXECUTE FUNCTION eventlog_head_schema.eventlog_notify();


--
-- PostgreSQL database dump complete
--
