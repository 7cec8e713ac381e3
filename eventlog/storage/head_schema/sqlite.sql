-- revision: 0032_compact_puts
CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
CREATE TABLE blobs (
	tenant_id VARCHAR(255) NOT NULL, 
	digest BLOB NOT NULL, 
	size BIGINT NOT NULL, 
	refs BIGINT NOT NULL, 
	data BLOB NOT NULL, 
	PRIMARY KEY (tenant_id, digest)
);
CREATE TABLE interrupt_batches (
	tenant_id VARCHAR(255) NOT NULL, 
	batch_id VARCHAR(255) NOT NULL, 
	thread_id VARCHAR(255) NOT NULL, 
	checkpoint_id VARCHAR(255) NOT NULL, 
	operation_name VARCHAR(255) NOT NULL, 
	operation_version VARCHAR(255) NOT NULL, 
	state VARCHAR(32) NOT NULL, 
	version BIGINT NOT NULL, 
	generation BIGINT NOT NULL, 
	token_digest VARCHAR(64), 
	lease_expires_at DATETIME, 
	approval_expires_at DATETIME NOT NULL, 
	effect_started BOOLEAN NOT NULL, 
	effect_generation BIGINT, 
	capture_id VARCHAR(64), 
	capture_generation BIGINT, 
	capture_state VARCHAR(32), 
	resolution VARCHAR(32), 
	reconciled_by VARCHAR(255), 
	descriptor BLOB NOT NULL, 
	created_position BIGINT NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_position BIGINT NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (tenant_id, batch_id)
);
CREATE INDEX interrupt_batches_list ON interrupt_batches (tenant_id, created_position);
CREATE INDEX interrupt_batches_state ON interrupt_batches (tenant_id, state, created_position);
CREATE INDEX interrupt_batches_thread ON interrupt_batches (tenant_id, thread_id, created_position);
CREATE INDEX interrupt_batches_lease ON interrupt_batches (state, lease_expires_at);
CREATE INDEX interrupt_batches_approval ON interrupt_batches (state, approval_expires_at);
CREATE INDEX interrupt_batches_updated ON interrupt_batches (state, updated_at);
CREATE INDEX interrupt_batches_capture ON interrupt_batches (capture_state, updated_at);
CREATE TABLE tree_states (
	tenant_id VARCHAR(255) NOT NULL, 
	size BIGINT NOT NULL, 
	cursor VARCHAR(255), 
	PRIMARY KEY (tenant_id)
);
CREATE TABLE tree_nodes (
	tenant_id VARCHAR(255) NOT NULL, 
	level SMALLINT NOT NULL, 
	idx BIGINT NOT NULL, 
	hash BLOB NOT NULL, 
	PRIMARY KEY (tenant_id, level, idx)
);
CREATE TABLE tree_leaves (
	tenant_id VARCHAR(255) NOT NULL, 
	event_id CHAR(32) NOT NULL, 
	leaf_index BIGINT NOT NULL, 
	PRIMARY KEY (tenant_id, event_id)
);
CREATE TABLE subject_keys (
	tenant_id VARCHAR(255) NOT NULL, 
	subject VARCHAR(255) NOT NULL, 
	generation INTEGER NOT NULL, 
	kek_id VARCHAR(255) NOT NULL, 
	wrapped BLOB, 
	created_at DATETIME NOT NULL, 
	erased_at DATETIME, 
	PRIMARY KEY (tenant_id, subject, generation)
);
CREATE TABLE consumers (
	name VARCHAR(255) NOT NULL, 
	scope_tenant VARCHAR(255), 
	types TEXT, 
	cursor VARCHAR(255), 
	token BIGINT NOT NULL, 
	holder VARCHAR(255), 
	lease_until DATETIME, 
	updated_at DATETIME NOT NULL, signature BLOB, 
	PRIMARY KEY (name)
);
CREATE TABLE stream_heads (
	tenant_id VARCHAR(255) NOT NULL, 
	stream_id VARCHAR(255) NOT NULL, 
	version BIGINT NOT NULL, 
	head_hash BLOB NOT NULL, 
	last_position BIGINT NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (tenant_id, stream_id)
) WITHOUT ROWID;
CREATE TABLE checkpoints (
	tenant_id VARCHAR(255) NOT NULL, 
	session_id VARCHAR(255) NOT NULL, 
	version BIGINT NOT NULL, 
	position BIGINT NOT NULL, 
	run_id CHAR(32) NOT NULL, 
	checkpoint_id VARCHAR(255) NOT NULL, 
	parent_id VARCHAR(255), 
	step BIGINT NOT NULL, 
	state_digest BLOB NOT NULL, 
	state_encoding VARCHAR(16) NOT NULL, 
	state_size BIGINT NOT NULL, 
	metadata TEXT NOT NULL, 
	recorded_at DATETIME NOT NULL, subject VARCHAR(255), 
	PRIMARY KEY (tenant_id, session_id, version)
) WITHOUT ROWID;
CREATE INDEX checkpoints_by_run ON checkpoints (tenant_id, run_id, position);
CREATE INDEX checkpoints_by_checkpoint_id ON checkpoints (tenant_id, session_id, checkpoint_id, version);
CREATE INDEX checkpoints_by_parent ON checkpoints (tenant_id, session_id, parent_id, version);
CREATE TABLE checkpoint_sessions (
	tenant_id VARCHAR(255) NOT NULL, 
	session_id VARCHAR(255) NOT NULL, 
	latest_version BIGINT NOT NULL, 
	latest_position BIGINT NOT NULL, 
	latest_checkpoint_id VARCHAR(255) NOT NULL, 
	latest_run_id CHAR(32) NOT NULL, 
	latest_step BIGINT NOT NULL, 
	updated_at DATETIME NOT NULL, latest_parent_id VARCHAR(255), latest_metadata TEXT DEFAULT '{}' NOT NULL, 
	PRIMARY KEY (tenant_id, session_id)
) WITHOUT ROWID;
CREATE TABLE checkpoint_runs (
	tenant_id VARCHAR(255) NOT NULL, 
	session_id VARCHAR(255) NOT NULL, 
	run_id CHAR(32) NOT NULL, 
	first_version BIGINT NOT NULL, 
	first_position BIGINT NOT NULL, 
	first_checkpoint_id VARCHAR(255) NOT NULL, 
	first_parent_id VARCHAR(255), 
	first_step BIGINT NOT NULL, 
	started_at DATETIME NOT NULL, 
	PRIMARY KEY (tenant_id, session_id, run_id)
) WITHOUT ROWID;
CREATE TABLE thread_checkpoints (
	tenant_id VARCHAR(255) NOT NULL, 
	thread_id VARCHAR(255) NOT NULL, 
	namespace TEXT NOT NULL, 
	checkpoint_id VARCHAR(255) NOT NULL, 
	version BIGINT NOT NULL, 
	position BIGINT NOT NULL, 
	parent_id VARCHAR(255), 
	run_key TEXT, 
	step BIGINT, 
	state_encoding VARCHAR(255) NOT NULL, 
	state_digest BLOB NOT NULL, 
	channels TEXT NOT NULL, 
	metadata TEXT NOT NULL, 
	recorded_at DATETIME NOT NULL, subject VARCHAR(255), 
	PRIMARY KEY (tenant_id, thread_id, namespace, checkpoint_id)
) WITHOUT ROWID;
CREATE TABLE thread_writes (
	tenant_id VARCHAR(255) NOT NULL, 
	thread_id VARCHAR(255) NOT NULL, 
	namespace TEXT NOT NULL, 
	checkpoint_id VARCHAR(255) NOT NULL, 
	task_id VARCHAR(255) NOT NULL, 
	idx BIGINT NOT NULL, 
	channel TEXT NOT NULL, 
	encoding VARCHAR(255) NOT NULL, 
	digest BLOB NOT NULL, 
	task_path TEXT NOT NULL, 
	version BIGINT NOT NULL, 
	PRIMARY KEY (tenant_id, thread_id, namespace, checkpoint_id, task_id, idx)
) WITHOUT ROWID;
CREATE INDEX checkpoints_by_subject ON checkpoints (tenant_id, subject) WHERE subject IS NOT NULL;
CREATE INDEX thread_checkpoints_by_subject ON thread_checkpoints (tenant_id, subject) WHERE subject IS NOT NULL;
CREATE TABLE keyrings (
	kek_id VARCHAR(255) NOT NULL, 
	check_value BLOB NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (kek_id)
);
CREATE TABLE events (
	position INTEGER NOT NULL PRIMARY KEY, 
	tenant_id VARCHAR(255) NOT NULL, 
	stream_id VARCHAR(255) NOT NULL, 
	stream_version BIGINT NOT NULL, 
	event_id CHAR(32) NOT NULL, 
	type VARCHAR(255) NOT NULL, 
	data BLOB NOT NULL, 
	recorded_at DATETIME NOT NULL, 
	prev_hash BLOB NOT NULL, 
	hash BLOB NOT NULL, actor VARCHAR(255), signature BLOB, 
	CONSTRAINT events_stream_version_key UNIQUE (tenant_id, stream_id, stream_version), 
	CONSTRAINT events_event_id_key UNIQUE (tenant_id, event_id)
);
CREATE INDEX events_tenant_position ON events (tenant_id, position);
CREATE INDEX thread_checkpoints_by_thread ON thread_checkpoints (tenant_id, thread_id, checkpoint_id) WHERE length(namespace) > 0;
CREATE TABLE thread_channel_values (
	tenant_id VARCHAR(255) NOT NULL, 
	thread_id VARCHAR(255) NOT NULL, 
	namespace TEXT NOT NULL, 
	channel TEXT NOT NULL, 
	channel_version TEXT NOT NULL, 
	encoding VARCHAR(255) NOT NULL, 
	digest BLOB NOT NULL, 
	PRIMARY KEY (tenant_id, thread_id, namespace, channel_version, channel)
) WITHOUT ROWID;
CREATE INDEX thread_checkpoints_by_run ON thread_checkpoints (run_key, tenant_id) WHERE run_key IS NOT NULL;
INSERT INTO alembic_version VALUES ('0032_compact_puts');
