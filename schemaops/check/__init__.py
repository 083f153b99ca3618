"""schemaops.check"""
