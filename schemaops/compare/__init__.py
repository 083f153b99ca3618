"""schemaops.compare"""
