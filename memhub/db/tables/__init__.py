"""The table definitions, one module per part of the hub, all on one MetaData.

Import the tables from memhub/db/schema.py, which gathers every module here (so ``metadata`` is complete once it is
imported: the migrations and their test compare it with the database).
"""

from sqlalchemy import MetaData

metadata = MetaData()
