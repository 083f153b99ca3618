"""schemaops.backends"""
