package ftstoken

// TablesVersion is the SQLite version the tables were generated from.
const TablesVersion = sqliteVersion
