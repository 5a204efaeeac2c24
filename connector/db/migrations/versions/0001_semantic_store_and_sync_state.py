"""semantic store and sync state

Revision ID: 0001
Revises: 
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import connector.db.types as ct

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table('crm_case',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('tenant', sa.String(length=64), nullable=False),
    sa.Column('external_id', sa.String(length=128), nullable=False),
    sa.Column('customer_external_id', sa.String(length=128), nullable=True),
    sa.Column('subject', sa.Text(), nullable=True),
    sa.Column('status', sa.String(length=64), nullable=True),
    sa.Column('priority', sa.String(length=32), nullable=True),
    sa.Column('case_class', sa.String(length=64), nullable=True),
    sa.Column('reported_at', ct.UTCDateTime(), nullable=True),
    sa.Column('closed_at', ct.UTCDateTime(), nullable=True),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('resolution', sa.Text(), nullable=True),
    sa.Column('is_closed', sa.Boolean(), nullable=False),
    sa.Column('extra', ct.JSONType, nullable=False),
    sa.Column('raw', ct.JSONType, nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('source_modified_at', ct.UTCDateTime(), nullable=True),
    sa.Column('synced_at', ct.UTCDateTime(), nullable=False),
    sa.Column('deleted_at', ct.UTCDateTime(), nullable=True),
    sa.Column('episodic_hash', sa.String(length=64), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('tenant', 'external_id', name='uq_crm_case_key')
    )
    with op.batch_alter_table('crm_case', schema=None) as batch_op:
        batch_op.create_index('ix_crm_case_customer', ['tenant', 'customer_external_id'], unique=False)

    op.create_table('document',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('tenant', sa.String(length=64), nullable=False),
    sa.Column('doc_type', sa.String(length=16), nullable=False),
    sa.Column('external_id', sa.String(length=160), nullable=False),
    sa.Column('number', sa.String(length=128), nullable=False),
    sa.Column('party_kind', sa.String(length=16), nullable=False),
    sa.Column('party_external_id', sa.String(length=128), nullable=False),
    sa.Column('status', sa.String(length=64), nullable=True),
    sa.Column('currency', sa.String(length=8), nullable=True),
    sa.Column('amount', ct.Money(), nullable=True),
    sa.Column('balance', ct.Money(), nullable=True),
    sa.Column('doc_date', sa.Date(), nullable=True),
    sa.Column('due_date', sa.Date(), nullable=True),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('customer_ref', sa.String(length=128), nullable=True),
    sa.Column('is_open', sa.Boolean(), nullable=False),
    sa.Column('extra', ct.JSONType, nullable=False),
    sa.Column('raw', ct.JSONType, nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('source_modified_at', ct.UTCDateTime(), nullable=True),
    sa.Column('synced_at', ct.UTCDateTime(), nullable=False),
    sa.Column('deleted_at', ct.UTCDateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('tenant', 'doc_type', 'external_id', name='uq_document_key')
    )
    with op.batch_alter_table('document', schema=None) as batch_op:
        batch_op.create_index('ix_document_number', ['tenant', 'number'], unique=False)
        batch_op.create_index('ix_document_party', ['tenant', 'party_kind', 'party_external_id', 'is_open'], unique=False)

    op.create_table('party',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('tenant', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('external_id', sa.String(length=128), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=True),
    sa.Column('status', sa.String(length=64), nullable=True),
    sa.Column('currency', sa.String(length=8), nullable=True),
    sa.Column('credit_limit', ct.Money(), nullable=True),
    sa.Column('terms', sa.String(length=64), nullable=True),
    sa.Column('tax_zone', sa.String(length=64), nullable=True),
    sa.Column('tax_id', sa.String(length=64), nullable=True),
    sa.Column('party_class', sa.String(length=64), nullable=True),
    sa.Column('email', sa.String(length=255), nullable=True),
    sa.Column('phone', sa.String(length=64), nullable=True),
    sa.Column('extra', ct.JSONType, nullable=False),
    sa.Column('raw', ct.JSONType, nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('source_modified_at', ct.UTCDateTime(), nullable=True),
    sa.Column('synced_at', ct.UTCDateTime(), nullable=False),
    sa.Column('deleted_at', ct.UTCDateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('tenant', 'kind', 'external_id', name='uq_party_key')
    )
    with op.batch_alter_table('party', schema=None) as batch_op:
        batch_op.create_index('ix_party_tenant_name', ['tenant', 'name'], unique=False)

    op.create_table('party_address',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('tenant', sa.String(length=64), nullable=False),
    sa.Column('party_kind', sa.String(length=16), nullable=False),
    sa.Column('party_external_id', sa.String(length=128), nullable=False),
    sa.Column('ordinal', sa.Integer(), nullable=False),
    sa.Column('role', sa.String(length=32), nullable=False),
    sa.Column('line1', sa.String(length=255), nullable=True),
    sa.Column('line2', sa.String(length=255), nullable=True),
    sa.Column('city', sa.String(length=128), nullable=True),
    sa.Column('region', sa.String(length=64), nullable=True),
    sa.Column('postal_code', sa.String(length=32), nullable=True),
    sa.Column('country', sa.String(length=64), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('party_address', schema=None) as batch_op:
        batch_op.create_index('ix_party_address_party', ['tenant', 'party_kind', 'party_external_id'], unique=False)

    op.create_table('party_attribute',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('tenant', sa.String(length=64), nullable=False),
    sa.Column('party_kind', sa.String(length=16), nullable=False),
    sa.Column('party_external_id', sa.String(length=128), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('value', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('tenant', 'party_kind', 'party_external_id', 'name', name='uq_party_attribute')
    )
    op.create_table('party_contact',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('tenant', sa.String(length=64), nullable=False),
    sa.Column('party_kind', sa.String(length=16), nullable=False),
    sa.Column('party_external_id', sa.String(length=128), nullable=False),
    sa.Column('ordinal', sa.Integer(), nullable=False),
    sa.Column('role', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=True),
    sa.Column('email', sa.String(length=255), nullable=True),
    sa.Column('phone', sa.String(length=64), nullable=True),
    sa.Column('external_id', sa.String(length=128), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('party_contact', schema=None) as batch_op:
        batch_op.create_index('ix_party_contact_party', ['tenant', 'party_kind', 'party_external_id'], unique=False)

    op.create_table('sync_run',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('tenant', sa.String(length=64), nullable=False),
    sa.Column('stream', sa.String(length=64), nullable=False),
    sa.Column('mode', sa.String(length=16), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('started_at', ct.UTCDateTime(), nullable=False),
    sa.Column('finished_at', ct.UTCDateTime(), nullable=True),
    sa.Column('window_start', ct.UTCDateTime(), nullable=True),
    sa.Column('window_end', ct.UTCDateTime(), nullable=True),
    sa.Column('pages', sa.Integer(), nullable=False),
    sa.Column('records_read', sa.Integer(), nullable=False),
    sa.Column('inserted', sa.Integer(), nullable=False),
    sa.Column('updated', sa.Integer(), nullable=False),
    sa.Column('unchanged', sa.Integer(), nullable=False),
    sa.Column('deleted', sa.Integer(), nullable=False),
    sa.Column('skipped', sa.Integer(), nullable=False),
    sa.Column('requests', sa.Integer(), nullable=False),
    sa.Column('retries', sa.Integer(), nullable=False),
    sa.Column('duration_s', sa.Float(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('sync_run', schema=None) as batch_op:
        batch_op.create_index('ix_sync_run_stream', ['tenant', 'stream', 'started_at'], unique=False)

    op.create_table('sync_state',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('tenant', sa.String(length=64), nullable=False),
    sa.Column('stream', sa.String(length=64), nullable=False),
    sa.Column('watermark', ct.UTCDateTime(), nullable=True),
    sa.Column('last_full_at', ct.UTCDateTime(), nullable=True),
    sa.Column('last_key_scan_at', ct.UTCDateTime(), nullable=True),
    sa.Column('updated_at', ct.UTCDateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('tenant', 'stream', name='uq_sync_state')
    )



def downgrade() -> None:

    op.drop_table('sync_state')
    with op.batch_alter_table('sync_run', schema=None) as batch_op:
        batch_op.drop_index('ix_sync_run_stream')

    op.drop_table('sync_run')
    with op.batch_alter_table('party_contact', schema=None) as batch_op:
        batch_op.drop_index('ix_party_contact_party')

    op.drop_table('party_contact')
    op.drop_table('party_attribute')
    with op.batch_alter_table('party_address', schema=None) as batch_op:
        batch_op.drop_index('ix_party_address_party')

    op.drop_table('party_address')
    with op.batch_alter_table('party', schema=None) as batch_op:
        batch_op.drop_index('ix_party_tenant_name')

    op.drop_table('party')
    with op.batch_alter_table('document', schema=None) as batch_op:
        batch_op.drop_index('ix_document_party')
        batch_op.drop_index('ix_document_number')

    op.drop_table('document')
    with op.batch_alter_table('crm_case', schema=None) as batch_op:
        batch_op.drop_index('ix_crm_case_customer')

    op.drop_table('crm_case')

