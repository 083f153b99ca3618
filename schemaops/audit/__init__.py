"""schemaops.audit"""
